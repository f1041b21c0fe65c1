"""Where a session may be used (docs/web.md, "Sessions").

A session belongs to the surface it was signed in on: one an app made with HTTP Basic on an app
API path (the gpodder API) serves only those paths, and one a person made on the sign-in page
serves only the pages and the admin. An app password (or a password an app was given) therefore
never opens the pages or the admin, and a person's browser never acts on the app API with its
cookie (a link followed would create a device). A session also remembers the app password that
made it: once that is revoked, the session ends on its next request, wherever it goes.
"""

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth import SESSION_KEY, get_user
from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest, HttpResponse
from django.utils.functional import SimpleLazyObject

from accounts.authentication import app_password_stands

# The surface a session was signed in on, and the app password it was made with, if any.
SURFACE_SESSION_KEY = "_surface"
APP_PASSWORD_SESSION_KEY = "_app_password_id"
APP = "app"
BROWSER = "browser"


def surface_of(path: str) -> str:
    """The surface a request's path_info (the path Django routes on, whatever SCRIPT_NAME a
    server puts before it) belongs to: the app APIs' paths, or the pages and admin."""
    return APP if path.startswith(tuple(settings.API_PATH_PREFIXES)) else BROWSER


def mark_signed_in_session(sender: Any, request: HttpRequest | None, **kwargs: Any) -> None:
    """Receiver of user_logged_in (AccountsConfig.ready): every sign-in, by any view (the
    pages, the admin, the gpodder API, Django's test client), marks its session with its
    surface. A browser sign-in over a session an app password made drops that app password."""
    session = getattr(request, "session", None)
    if request is None or session is None:
        return
    surface = surface_of(request.path_info)
    if session.get(SURFACE_SESSION_KEY, surface) != surface:
        # The same person signed in on the other surface with this cookie: Django keeps the
        # session's key for the same user, which would leave the old surface's holder of the
        # cookie (an app, or whoever planted it) signed in on this one.
        session.cycle_key()
    session[SURFACE_SESSION_KEY] = surface
    if surface == BROWSER:
        session.pop(APP_PASSWORD_SESSION_KEY, None)


def _user_here(request: HttpRequest) -> Any:
    """The user of the request's session, if that session may be used on the request's path; a
    session whose app password was revoked is ended."""
    session = request.session
    if SESSION_KEY in session:
        app_password_id = session.get(APP_PASSWORD_SESSION_KEY)
        if app_password_id is not None and not app_password_stands(
            user_id=session[SESSION_KEY], app_password_id=app_password_id
        ):
            session.flush()
            return AnonymousUser()
        if session.get(SURFACE_SESSION_KEY) != surface_of(request.path_info):
            return AnonymousUser()
    return get_user(request)


class SessionSurfaceMiddleware:
    """After Django's AuthenticationMiddleware, whose lazy `request.user` it replaces: a session
    signed in on another surface than the request's is nobody here (a session without a mark,
    made before sessions had one, is nobody anywhere), and one whose app password was revoked is
    ended. Lazy like Django's, so a request that never asks who it is never reads its session."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if hasattr(request, "user"):  # not on /v1/: bearer tokens only, no session
            request.user = SimpleLazyObject(lambda: _user_here(request))  # type: ignore[assignment]
        return self.get_response(request)
