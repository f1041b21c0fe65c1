"""The parsers every API shares: strict JSON, raw XML bodies handed to the view as bytes, and
what the apps' protocols send: JSON whatever the Content-Type says (mygpoclient labels it
application/x-www-form-urlencoded, AntennaPod plain/text), and the gpodder simple API's raw
lists."""

import io
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from rest_framework import parsers
from rest_framework.exceptions import ParseError

from core.exceptions import InvalidInput


class JSONParser(parsers.JSONParser):
    """DRF's strict JSON parser, also refusing bodies nested too deeply to decode.

    The standard library raises RecursionError, not ValueError, on deep nesting, which DRF
    would let through as a 500.
    """

    def parse(self, stream: Any, media_type: Any = None, parser_context: Any = None) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError as exc:
            raise ParseError("JSON parse error - nested too deeply") from exc


class RawXMLParser(parsers.BaseParser):
    """Hands the view the body's bytes: the view's XML reader decides what they are."""

    media_type = "application/xml"

    # The stubs type a parse result as a mapping; DRF itself takes any value as request.data.
    def parse(self, stream: Any, media_type: Any = None, parser_context: Any = None) -> Any:
        return bytes(stream.read())


class RawTextXMLParser(RawXMLParser):
    media_type = "text/xml"


class AnyJSONParser(JSONParser):
    """JSON whatever its label: the apps' protocols."""

    media_type = "*/*"


class RawBodyParser(parsers.BaseParser):
    """The body's bytes, for the view to read in the format its path names (the gpodder simple
    API's json, txt and opml)."""

    media_type = "*/*"

    # The stubs type a parse result as a mapping; DRF itself takes any value as request.data.
    def parse(self, stream: Any, media_type: Any = None, parser_context: Any = None) -> Any:
        return bytes(stream.read())


def has_body(request: HttpRequest) -> bool:
    """Whether the request says it has a body (a Content-Length above 0)."""
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0) > 0
    except ValueError:
        return False


def app_json(request: HttpRequest) -> Any:
    """The JSON body of an app's request to the fast path (fastpath) read as the views read it
    (AnyJSONParser, in the charset the request names); InvalidInput when it has none (the
    view's to answer: each protocol says what an empty body means), ParseError as the views."""
    if not has_body(request):
        raise InvalidInput("no body")
    context = {"encoding": request.encoding or settings.DEFAULT_CHARSET}
    return AnyJSONParser().parse(io.BytesIO(request.body), request.content_type, context)
