"""What the OPML import reads: an OPML document as the raw body under any of its media types, or
as the `file` field of a multipart upload."""

from rest_framework import parsers

from api.parsers import RawTextXMLParser, RawXMLParser


class RawOPMLParser(RawXMLParser):
    media_type = "text/x-opml"


OPML_PARSERS = [RawOPMLParser, RawXMLParser, RawTextXMLParser]
OPML_IMPORT_PARSERS = [*OPML_PARSERS, parsers.MultiPartParser]
