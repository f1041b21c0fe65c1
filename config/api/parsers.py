"""The JSON parser of every /v1/ endpoint."""

from typing import Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError


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
