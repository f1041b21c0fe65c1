"""The error object and the one exception handler that turns every error into it.

Every error on every /v1/ path is `{"code": "<HTTP status>", "message": "..."}`, optionally
with `errors` naming the bad fields. Input that cannot be validated is a 405 (docs/api.md,
"Errors").
"""

import errno
import logging
import math
import sys
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, TooManyFieldsSent
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, UnreadablePostError
from django.views import defaults
from rest_framework import exceptions as drf
from rest_framework.response import Response
from rest_framework.views import set_rollback

from api.browsers import from_browser
from core import exceptions as domain

logger = logging.getLogger(__name__)

MESSAGES = {
    400: "Bad request",
    401: "User not authorized",
    403: "User not authorized",
    404: "Resource not found",
    405: "Input could not be validated",
    409: "Conflict with a concurrent request: send it again",
    410: "Subscription has been deleted",
    415: "Unsupported media type: send application/json",
    500: "Internal server error",
    503: "Service unavailable: the database cannot be reached",
}

DOMAIN_STATUS: dict[type[domain.DomainError], int] = {
    domain.NotAuthorized: 401,
    domain.NotFound: 404,
    domain.InvalidInput: 405,
    domain.Gone: 410,
}


def error_body(status: int, message: str | None = None, errors: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": str(status), "message": message or MESSAGES.get(status, "")}
    if errors:
        body["errors"] = errors
    return body


def error_response(status: int, message: str | None = None) -> JsonResponse:
    """The error object for answers made outside DRF (middleware, Django's handlers)."""
    return JsonResponse(error_body(status, message), status=status)


def _is_api(request: HttpRequest) -> bool:
    return request.path_info.startswith(settings.API_PATH_PREFIXES)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """Django's handler400 (a bad Host header, for instance): the error object on API paths."""
    return error_response(400) if _is_api(request) else defaults.bad_request(request, exception)


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """Django's handler404: the error object on an API path no version's catch-all took (the
    Nextcloud paths without /index.php, mounted among the pages)."""
    if _is_api(request):
        return error_response(404)
    return defaults.page_not_found(request, exception)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _is_api(request):
        return error_response(403)
    return defaults.permission_denied(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    """Django's handler500: an error that escaped DRF (a session saved by a middleware, a page
    of the admin) still answers with the error object, and a database away with a 503."""
    unavailable = database_unavailable(sys.exc_info()[1])
    if unavailable is not None:
        response: HttpResponse = (
            error_response(503, unavailable)
            if _is_api(request)
            else HttpResponse(unavailable, status=503, content_type="text/plain; charset=utf-8")
        )
        response["Retry-After"] = str(settings.DATABASE_RETRY_AFTER)
        return response
    return error_response(500) if _is_api(request) else defaults.server_error(request)


# A body that stopped arriving or came too slowly (core.workers' bounds), or that the client
# ended early.
BODY_LATE = (
    "Request timeout: the request's body stopped arriving, or came too slowly (CLIENT_TIMEOUT)"
)
BODY_CUT_SHORT = "Bad request: the request's body ended before its Content-Length"


def body_not_received(exc: BaseException) -> tuple[int, str] | None:
    """The status and message for a body the client stopped sending (408: nothing came for
    CLIENT_TIMEOUT seconds, core.workers) or cut short (400), or None for any other error. The
    client has most likely gone; the answer is for one that is only slow, and for the log."""
    if not isinstance(exc, UnreadablePostError):
        return None
    cause = exc.__cause__
    while isinstance(cause, UnreadablePostError):  # request.body wraps read()'s own
        cause = cause.__cause__
    if isinstance(cause, TimeoutError) or getattr(cause, "errno", None) in (
        errno.EAGAIN,
        errno.EWOULDBLOCK,
    ):
        return 408, BODY_LATE
    return 400, BODY_CUT_SHORT


# SQLSTATEs of a write that lost to a concurrent one: serialization failure, deadlock, lock
# not available. The request did nothing and can simply be sent again.
_CONFLICTS = {"40001", "40P01", "55P03"}


def _is_conflict(exc: Exception) -> bool:
    return isinstance(exc, OperationalError) and (
        getattr(exc.__cause__, "sqlstate", None) in _CONFLICTS
    )


# SQLSTATEs of a database that is there but cannot serve this request now.
_UNAVAILABLE = {
    "57014": "Service unavailable: the database did not answer in time",  # statement timeout
    "53300": "Service unavailable: the database has no free connection",  # too many clients
    "57P03": "Service unavailable: the database is starting up or shutting down",
    "57P01": "Service unavailable: the database is shutting down",
}


def database_unavailable(exc: BaseException | None) -> str | None:
    """The 503 message for an error that says the database cannot serve now (away, refusing
    connections, shutting down, too slow), or None for any other error.

    Not a conflict: a write that lost to a concurrent one is a 409. Clients, proxies and load
    balancers retry a 503, where they take a 500 for a bug in the server.
    """
    if not isinstance(exc, OperationalError | InterfaceError) or _is_conflict(exc):
        return None
    sqlstate = getattr(exc.__cause__, "sqlstate", None) or _refused_state(str(exc))
    return _UNAVAILABLE.get(sqlstate or "", MESSAGES[503])


# A connection refused by the server carries no SQLSTATE in psycopg's exception, only the
# server's message (in English, as the service's PostgreSQL speaks it).
_REFUSALS = {
    "too many connections": "53300",
    "too many clients": "53300",
    "connection slots are reserved": "53300",
    "the database system is starting up": "57P03",
    "the database system is shutting down": "57P03",
}


def _refused_state(message: str) -> str | None:
    return next((state for text, state in _REFUSALS.items() if text in message), None)


def unsupported_media_type_message(parsers: Iterable[Any]) -> str | None:
    """Names the content types `parsers` read, e.g. `send application/json`."""
    accepted = [parser.media_type for parser in parsers]
    if not accepted:
        return None
    names = accepted[0] if len(accepted) == 1 else f"{', '.join(accepted[:-1])} or {accepted[-1]}"
    return f"Unsupported media type: send {names}"


def _authenticate_header(exc: Exception, context: dict[str, Any]) -> str | None:
    """The scheme a 401 asks for: the view's first authentication's (Bearer on /v1/, Basic with
    a realm on the gpodder API), else Bearer. None, no challenge, for Basic to a browser
    (api.browsers): it would ask the person for the password and then send it with whatever
    other sites make it send."""
    view, request = context.get("view"), context.get("request")
    header = getattr(exc, "auth_header", None)
    if header is None and view is not None and request is not None:
        header = view.get_authenticate_header(request)
    header = header or "Bearer"
    if header.lower().startswith("basic") and request is not None and from_browser(request):
        return None
    return header


def _first_problem(detail: Any, where: str = "") -> str:
    """The first error of a validation error's detail, with the field it is about."""
    if isinstance(detail, dict) and detail:
        field, inner = next(iter(detail.items()))
        name = "" if field == "non_field_errors" else str(field)
        return _first_problem(inner, f"{where}.{name}".strip(".") if name else where)
    if isinstance(detail, list) and detail:
        return _first_problem(detail[0], where)
    return f"{where}: {detail}" if where else str(detail)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    headers: dict[str, str] = {}
    errors: Any = None
    message: str | None = None
    # Input that cannot be validated: 405 on /v1/ (docs/api.md, "Errors"), 400 where a view says
    # so (the gpodder API).
    invalid = getattr(context.get("view"), "invalid_input_status", 405)

    if isinstance(exc, domain.DomainError):
        status = next(s for cls, s in DOMAIN_STATUS.items() if isinstance(exc, cls))
        message, errors = exc.message, exc.errors
        if status == 405:
            status = invalid
        if status == 401 and (challenge := _authenticate_header(exc, context)):
            headers["WWW-Authenticate"] = challenge
    elif isinstance(exc, Http404 | drf.NotFound):
        status = 404
    elif isinstance(exc, drf.NotAuthenticated | drf.AuthenticationFailed):
        status = 401
        if challenge := _authenticate_header(exc, context):
            headers["WWW-Authenticate"] = challenge
    elif isinstance(exc, drf.ValidationError | drf.ParseError):
        status = invalid
        errors = exc.detail if isinstance(exc, drf.ValidationError) else None
        message = f"{MESSAGES[405]}: {exc.detail}" if isinstance(exc, drf.ParseError) else None
        if message is None and invalid != 405:
            # Where the message is all most clients show (the gpodder API), it names the field.
            message = f"{MESSAGES[405]}: {_first_problem(errors)}"
        message = message or MESSAGES[405]
    elif (unread := body_not_received(exc)) is not None:
        status, message = unread
    elif isinstance(exc, TooManyFieldsSent):
        status = invalid
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
        message = f"{MESSAGES[405]}: too many parameters, at most {limit}"
    elif _is_conflict(exc):
        status = 409
    elif (unavailable := database_unavailable(exc)) is not None:
        logger.warning("Database unavailable: %s", exc)
        status, message = 503, unavailable
        headers["Retry-After"] = str(settings.DATABASE_RETRY_AFTER)
    elif isinstance(exc, drf.MethodNotAllowed):
        status = 405
        method = context["request"].method if context.get("request") else "this method"
        message = f"{MESSAGES[405]}: {method} is not allowed here"
    elif isinstance(exc, drf.Throttled):
        status = 429
        message = str(exc.detail)
        wait = getattr(exc, "wait", None)
        if wait is not None:
            headers["Retry-After"] = str(math.ceil(wait))
    elif isinstance(exc, drf.UnsupportedMediaType):
        status = 415
        view = context.get("view")
        message = unsupported_media_type_message(view.get_parsers() if view else [])
    elif isinstance(exc, drf.PermissionDenied | PermissionDenied):
        status = 403
    elif isinstance(exc, drf.APIException):
        status = exc.status_code
        message = str(exc.detail)
    else:
        logger.exception("Unhandled error", exc_info=exc)
        status = 500

    set_rollback()
    return Response(error_body(status, message, errors), status=status, headers=headers)
