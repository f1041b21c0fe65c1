"""The JSON renderer of every /v1/ endpoint."""

from typing import Any

from rest_framework import renderers


class _EscapingJSONRenderer(renderers.JSONRenderer):
    ensure_ascii = True


class JSONRenderer(renderers.JSONRenderer):
    """DRF's renderer, escaping non-ASCII only when the data cannot be UTF-8.

    A lone surrogate a client sent (valid in JSON as "\\ud800") and that we echo back, in a
    failure entry for instance, has no UTF-8 form; as a JSON escape it round-trips.
    """

    def render(
        self, data: Any, accepted_media_type: Any = None, renderer_context: Any = None
    ) -> bytes:
        try:
            return super().render(data, accepted_media_type, renderer_context)
        except UnicodeEncodeError:
            return _EscapingJSONRenderer().render(data, accepted_media_type, renderer_context)
