"""The JSON renderer of every /v1/ endpoint."""

from typing import Any

import orjson
from django.http import HttpResponse
from rest_framework import renderers
from rest_framework.utils.encoders import JSONEncoder

# Keys as json.dumps takes them, and timestamps left to DRF's encoder, so that the bytes are the
# ones DRF's own renderer makes.
_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATETIME
_ENCODER = JSONEncoder()


class _EscapingJSONRenderer(renderers.JSONRenderer):
    ensure_ascii = True


class JSONRenderer(renderers.JSONRenderer):
    """DRF's renderer, its bytes made by orjson where it can, which is much faster
    (bench/README.md, "api.renderers.JSONRenderer").

    DRF's own makes the rest: indented output (orjson indents by two spaces only), and data that
    cannot be UTF-8, which it escapes to ASCII: a lone surrogate a client sent (valid in JSON
    as "\\ud800") and that we echo back, in a failure entry for instance, round-trips as a JSON
    escape. One difference: a float that is NaN or infinite becomes null where DRF's raises; no
    response carries a float.
    """

    def render(
        self, data: Any, accepted_media_type: Any = None, renderer_context: Any = None
    ) -> bytes:
        if data is None:
            return b""
        if self.get_indent(accepted_media_type, renderer_context or {}) is None:
            try:
                rendered = orjson.dumps(data, default=_ENCODER.default, option=_OPTIONS)
            except orjson.JSONEncodeError:
                pass
            else:
                # As DRF does, for JavaScript's sake (both are valid in JSON).
                return rendered.replace(b"\xe2\x80\xa8", b"\\u2028").replace(
                    b"\xe2\x80\xa9", b"\\u2029"
                )
        try:
            return super().render(data, accepted_media_type, renderer_context)
        except UnicodeEncodeError:
            return _EscapingJSONRenderer().render(data, accepted_media_type, renderer_context)


def json_answer(data: Any) -> HttpResponse:
    """A 200 of `data` with the bytes and type a view's Response of it has (the fast path's:
    fastpath)."""
    return HttpResponse(JSONRenderer().render(data), content_type=JSONRenderer.media_type)
