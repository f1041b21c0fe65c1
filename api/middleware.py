"""Checks on API requests (API_PATH_PREFIXES) made before any view runs, answering with the
error object; the admin's middleware, which /v1/ requests skip."""

from collections.abc import Callable

from csp import middleware as csp
from django.conf import settings
from django.contrib.auth import middleware as auth
from django.contrib.messages import middleware as messages
from django.contrib.sessions import middleware as sessions
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse

from api.errors import error_response


class ApiMiddleware:
    """A middleware that acts on API requests only (API_PATH_PREFIXES, read once)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response
        self.prefixes = tuple(settings.API_PATH_PREFIXES)


class BodySizeLimitMiddleware(ApiMiddleware):
    """Answers 413 with the error object when an API request's body is over MAX_BODY_BYTES.

    DRF parsers read the stream directly, so Django's own DATA_UPLOAD_MAX_MEMORY_SIZE check
    never runs for JSON bodies.
    """

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith(self.prefixes):
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            limit = settings.MAX_BODY_BYTES
            if length > limit:
                _discard_body(request, length)
                return error_response(413, f"Request body too large: the limit is {limit} bytes")
        return self.get_response(request)


def _discard_body(request: HttpRequest, length: int) -> None:
    """Read the body (up to BODY_DISCARD_BYTES) before answering: a client sends its whole body
    before it reads the answer, and a server that answers and closes while it is still sending
    resets the connection, which takes the 413 with it."""
    stream = request.META.get("wsgi.input")
    left = min(length, settings.BODY_DISCARD_BYTES)
    try:
        while left > 0 and stream is not None:
            chunk = stream.read(min(left, 65536))
            if not chunk:
                break
            left -= len(chunk)
    except OSError:
        pass  # the client has gone: nobody is left to read the answer


class AllowedHostMiddleware(ApiMiddleware):
    """Answers 400 with the error object for an API request to a host not in ALLOWED_HOSTS.

    Django would raise DisallowedHost later on, and with DEBUG on answer its HTML debug page.
    """

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith(self.prefixes):
            try:
                request.get_host()
            except DisallowedHost:
                return error_response(400, "Bad request: host not allowed")
        return self.get_response(request)


class SkippedForApi:
    """Makes a middleware of the admin's (sessions, its user, messages) pass /v1/ requests straight
    on: they carry bearer tokens and no cookies, so the three would only cost time
    (bench/README.md, "api.middleware.SkippedForApi"). CSRF's stays as it is: `check --deploy`
    looks for it by name, and it costs little."""

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith("/v1/"):
            return self.get_response(request)  # type: ignore[attr-defined]
        return super().__call__(request)  # type: ignore[misc]


class SessionMiddleware(SkippedForApi, sessions.SessionMiddleware):
    pass


class AuthenticationMiddleware(SkippedForApi, auth.AuthenticationMiddleware):
    pass


class MessageMiddleware(SkippedForApi, messages.MessageMiddleware):
    pass


class CSPMiddleware(SkippedForApi, csp.CSPMiddleware):
    pass
