"""What gpodder apps send: JSON whatever the Content-Type says (mygpoclient labels it
application/x-www-form-urlencoded, AntennaPod plain/text), and the simple API's raw lists."""

from typing import Any

from rest_framework import parsers

from api.parsers import JSONParser


class AnyJSONParser(JSONParser):
    media_type = "*/*"


class RawBodyParser(parsers.BaseParser):
    """The body's bytes, for the view to read in the format its path names."""

    media_type = "*/*"

    # The stubs type a parse result as a mapping; DRF itself takes any value as request.data.
    def parse(self, stream: Any, media_type: Any = None, parser_context: Any = None) -> Any:
        return bytes(stream.read())
