"""Checks on /v1/ requests made before any view runs, answering with the error object."""

from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse

from config.api.errors import error_response


class BodySizeLimitMiddleware:
    """Answers 413 with the error object when a /v1/ body is over MAX_BODY_BYTES.

    DRF parsers read the stream directly, so Django's own DATA_UPLOAD_MAX_MEMORY_SIZE check
    never runs for JSON bodies.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith("/v1/"):
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            limit = settings.MAX_BODY_BYTES
            if length > limit:
                return error_response(413, f"Request body too large: the limit is {limit} bytes")
        return self.get_response(request)


class AllowedHostMiddleware:
    """Answers 400 with the error object for a /v1/ request to a host not in ALLOWED_HOSTS.

    Django would raise DisallowedHost later on, and with DEBUG on answer its HTML debug page.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith("/v1/"):
            try:
                request.get_host()
            except DisallowedHost:
                return error_response(400, "Bad request: host not allowed")
        return self.get_response(request)
