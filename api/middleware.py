"""Checks made before any view runs (the proxy headers of an untrusted peer dropped; body limits),
the answers' Cache-Control, and the admin's middleware, which /v1/ requests skip. The hosts
answered are api.hosts'."""

import ipaddress
from collections.abc import Callable
from functools import lru_cache

from csp import middleware as csp
from django.conf import settings
from django.contrib.auth import middleware as auth
from django.contrib.messages import middleware as messages
from django.contrib.sessions import middleware as sessions
from django.http import HttpRequest, HttpResponse

from api.errors import BODY_CUT_SHORT, BODY_LATE, body_not_received, error_response

# What a proxy in front tells about the request it passes on: the client's address, and the
# scheme, host and port it was sent to (Django reads the host and port only with
# USE_X_FORWARDED_HOST and _PORT, off here), and the standard header that says all of them.
_PROXY_HEADERS = (
    "HTTP_X_FORWARDED_FOR",
    "HTTP_X_FORWARDED_PROTO",
    "HTTP_X_FORWARDED_HOST",
    "HTTP_X_FORWARDED_PORT",
    "HTTP_FORWARDED",
)

_Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@lru_cache(maxsize=4)
def _networks(proxies: tuple[str, ...]) -> tuple[_Network, ...]:
    return tuple(ipaddress.ip_network(proxy.strip()) for proxy in proxies if proxy.strip())


def trusted_proxy(peer: str | None) -> bool:
    """Whether the peer (REMOTE_ADDR) is one of TRUSTED_PROXIES. A peer with no address is a
    Unix socket's, so a process of this machine, trusted as gunicorn trusts it."""
    if not peer:
        return True
    try:
        address = ipaddress.ip_address(peer.partition("%")[0])  # no IPv6 zone
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped  # a dual-stack socket's IPv4 peer
    return any(address in network for network in _networks(tuple(settings.TRUSTED_PROXIES)))


class TrustedProxiesMiddleware:
    """Drops the proxy headers (X-Forwarded-For, X-Forwarded-Proto and their kin) of a request
    whose peer is not a trusted proxy (TRUSTED_PROXIES), before anything reads them
    (docs/operations.md, "Behind a proxy"). Whoever reaches the server directly so chooses
    neither the address the throttles and the login lockout count (DRF reads X-Forwarded-For when
    NUM_PROXIES is set) nor HTTPS (SECURE_PROXY_SSL_HEADER: the cookies' Secure, the Nextcloud
    login's server address, the links built from the request). WSGI's META is the request's own:
    nothing else sees the change. Before any middleware that asks whether a request is secure.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not trusted_proxy(request.META.get("REMOTE_ADDR")):
            for name in _PROXY_HEADERS:
                request.META.pop(name, None)
        return self.get_response(request)


# The page that takes an import's history file (web.urls), up to IMPORT_MAX_FILE_BYTES.
IMPORT_FILE_PATH = "/data/import-history/"


def body_limit(path: str) -> tuple[int, str]:
    """The most bytes a request's body to `path` (its path_info) may hold, and the setting that
    says so. core.workers asks it too, before any thread reads a body (config/gunicorn.py)."""
    if path == IMPORT_FILE_PATH:  # a history of years (docs/imports.md)
        return settings.IMPORT_MAX_FILE_BYTES + 64 * 1024, "IMPORT_MAX_FILE_BYTES"
    if _api_path(path):
        return settings.MAX_BODY_BYTES, "MAX_BODY_BYTES"
    return settings.MAX_PAGE_BODY_BYTES, "MAX_PAGE_BODY_BYTES"


def body_refusal(path: str, why: str) -> HttpResponse:
    """The answer to a body refused before it was read whole: "too large" (413, over
    body_limit(path)), "late" (408, CLIENT_TIMEOUT), "cut short" (400, the client closed) or
    "malformed" (400, no chunked body); the error object on API paths, plain text on the
    pages."""
    if why == "too large":
        limit, setting = body_limit(path)
        return _refusal(path, 413, f"Request body too large: the limit is {limit} bytes", setting)
    status, message = {
        "late": (408, BODY_LATE),
        "cut short": (400, BODY_CUT_SHORT),
        "malformed": (400, "Bad request: the request's chunked body is malformed"),
    }[why]
    return _refusal(path, status, message)


def _api_path(path: str) -> bool:
    return path.startswith(tuple(settings.API_PATH_PREFIXES))


def body_discard_bytes() -> int:
    return settings.BODY_DISCARD_BYTES


def _refusal(path: str, status: int, message: str, setting: str = "") -> HttpResponse:
    if _api_path(path):
        return error_response(status, message)
    text = f"{message} ({setting}).\n" if setting else f"{message}.\n"
    return HttpResponse(text, status=status, content_type="text/plain; charset=utf-8")


class BodySizeLimitMiddleware:
    """Answers 413 when a request's body is over its limit (body_limit), before anything reads
    it: on API paths with the error object, elsewhere (the pages, the admin) in plain text.
    Under gunicorn the worker has answered it already (core.workers); this is for any other
    server.

    DRF parsers read the stream directly, so Django's own DATA_UPLOAD_MAX_MEMORY_SIZE check
    never runs for JSON bodies; and Django spools a large multipart upload to a temporary file
    before the CSRF check could refuse it.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        length = _content_length(request)
        if length <= body_limit(request.path_info)[0]:
            return self.get_response(request)
        _discard_body(request, length)
        return body_refusal(request.path_info, "too large")


class SignedInUploadMiddleware:
    """The history file's larger limit (IMPORT_FILE_PATH, IMPORT_MAX_FILE_BYTES) is for a person
    signed in on the pages alone: anyone else's body past MAX_PAGE_BODY_BYTES is refused here,
    before Django reads it. Past the session's and the user's middleware, ahead of the CSRF
    check, which would parse a multipart body, writing its file to disk, before refusing it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path_info == IMPORT_FILE_PATH:
            length = _content_length(request)
            limit = settings.MAX_PAGE_BODY_BYTES
            if length > limit and not request.user.is_authenticated:
                _discard_body(request, length)
                return HttpResponse(
                    f"Request body too large: the limit is {limit} bytes (MAX_PAGE_BODY_BYTES) "
                    "until you sign in.\n",
                    status=413,
                    content_type="text/plain; charset=utf-8",
                )
        return self.get_response(request)


def _content_length(request: HttpRequest) -> int:
    """The body's declared length (0 when none, or not a number)."""
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0


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


class BodyNotReceivedMiddleware:
    """A page's or the admin's body that stopped arriving or was cut short (Django raises
    UnreadablePostError) is the client's 408 or 400, not the server's 500; DRF's views answer
    it in api.errors.exception_handler."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        unread = body_not_received(exception)
        if unread is None:
            return None
        status, message = unread
        return _refusal(request.path_info, status, message)


class PrivateAnswersMiddleware:
    """Marks every answer `Cache-Control: private, no-store` unless its view chose its own:
    nearly every answer here is someone's subscriptions, devices, history or account, and none
    may be kept by a shared cache or on a shared computer's disk. Static files are served before
    this (WhiteNoise) with their own long caching."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if "Cache-Control" not in response:
            response["Cache-Control"] = "private, no-store"
        return response


class SecureCookiesOverHttpsMiddleware:
    """Cookies are `Secure` when the request came over HTTPS (directly, or as the proxy header
    SECURE_PROXY_SSL_HEADER says) and not otherwise (docs/operations.md, "Cookies over plain
    HTTP").

    SESSION_COOKIE_SECURE and CSRF_COOKIE_SECURE stay true, so that `check --deploy` keeps its
    checks; this takes the flag off the cookies of an answer to a plain-HTTP request: a client
    would never send such a cookie back over `http://` (browsers do not even keep it), so a
    plain-HTTP deployment could sign no one in (the gpodder apps, the pages). Placed outside
    every middleware that sets a cookie (the session's, CSRF's, messages'), it sees them all.
    Django's own CsrfViewMiddleware stays in MIDDLEWARE by name: `check --deploy` looks for it.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.cookies and not request.is_secure():
            for morsel in response.cookies.values():
                morsel["secure"] = ""
        return response


class SkippedForApi:
    """Makes a middleware of the admin's (sessions, its user, messages) pass /v1/ requests straight
    on: they carry bearer tokens and no cookies, so the three would only cost time
    (bench/README.md, "api.middleware.SkippedForApi"). CSRF's stays as it is: `check --deploy`
    looks for it by name, and it costs little."""

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if self.skips(request):
            return self.get_response(request)  # type: ignore[attr-defined]
        return super().__call__(request)  # type: ignore[misc]

    @staticmethod
    def skips(request: HttpRequest) -> bool:
        return request.path_info.startswith("/v1/")


class SessionMiddleware(SkippedForApi, sessions.SessionMiddleware):
    pass


class AuthenticationMiddleware(SkippedForApi, auth.AuthenticationMiddleware):
    pass


class MessageMiddleware(SkippedForApi, messages.MessageMiddleware):
    pass


class CSPMiddleware(SkippedForApi, csp.CSPMiddleware):
    pass
