"""Content negotiation of the API: DRF's, sooner for what apps send, and one that ignores Accept."""

from collections.abc import Iterable
from typing import Any

from django.http import HttpRequest
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.settings import api_settings


class ContentNegotiation(DefaultContentNegotiation):
    """DRF's negotiation, answering at once for what apps send: no Accept, `*/*`, or exactly the
    first renderer's media type, for which DRF's parsing of the header comes to the same answer
    (bench/README.md, "api.negotiation.ContentNegotiation")."""

    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: Any = None
    ) -> tuple[BaseRenderer, str]:
        renderers = list(renderers)
        first = renderers[0]
        if not format_suffix and asks_plainly(request, first.media_type):
            return first, first.media_type
        return super().select_renderer(request, renderers, format_suffix)


def asks_plainly(request: Request | HttpRequest, media_type: str) -> bool:
    """Whether a request asks for `media_type` as apps do, which DRF's parsing of Accept would
    answer with it too: no Accept, `*/*` or exactly it, and no format in the query (the fast
    path asks it too: fastpath)."""
    accept = request.META.get("HTTP_ACCEPT", "*/*")
    return accept in ("*/*", media_type) and api_settings.URL_FORMAT_OVERRIDE not in request.GET


class IgnoreAcceptNegotiation(DefaultContentNegotiation):
    """Ignores Accept: a view that answers in one format answers in it, whatever a client asks.

    The OPML export is OPML and its errors JSON; DRF would otherwise answer 406 to an app that
    asks for the OPML it is about to get.
    """

    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        first = next(iter(renderers))
        return first, str(first.media_type)
