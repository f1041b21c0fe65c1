"""Where a session may be used (docs/web.md, "Sessions").

A session belongs to the surface it was signed in on: one an app made with HTTP Basic on an app
API path (the gpodder API) serves only those paths, and one a person made on the sign-in page
serves only the pages and the admin. An app password (or a password an app was given) therefore
never opens the pages or the admin, and a person's browser never acts on the app API with its
cookie (a link followed would create a device). A session also remembers the app password that
made it: once that is revoked, the session ends on its next request, wherever it goes.

Apps sync every few minutes on their session cookie, so a web process remembers the app sessions
and their users it read for AUTH_USER_CACHE_SECONDS, and checks on each request, in one small
prepared lookup, that the session still stands unchanged and what its account's state is: a
sign-out, a new password or a deactivation counts at once in every process
(bench/README.md, "accounts.sessions.SessionStore").
"""

import functools
import threading
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from cachetools import TTLCache
from django.conf import settings
from django.contrib.auth import (
    BACKEND_SESSION_KEY,
    HASH_SESSION_KEY,
    SESSION_KEY,
    get_user,
    get_user_model,
)
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.contrib.sessions.backends import db
from django.contrib.sessions.models import Session
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.crypto import constant_time_compare
from django.utils.functional import SimpleLazyObject

from accounts.active import (
    AccountState,
    account_state_sql,
    active_users,
    app_password_stands,
    current_user,
)
from core.db import sql

# The surface a session was signed in on, and the app password it was made with, if any.
SURFACE_SESSION_KEY = "_surface"
APP_PASSWORD_SESSION_KEY = "_app_password_id"
# The request's attribute holding active_users' generation when the request began.
USERS_GENERATION = "_active_users_generation"
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
    elif isinstance(user := kwargs.get("user"), AbstractBaseUser):
        # Read and saved (its last login) a moment ago: the app's next request needs no query.
        # Unless a change of the account was announced since this request began (its password
        # changed elsewhere while this sign-in checked the old one): then it is not remembered.
        active_users.add_user(user, generation=getattr(request, USERS_GENERATION, -1))


class _AppSessions:
    """The data of app sessions this process read, by session key, until the earlier of their
    expiry and AUTH_USER_CACHE_SECONDS; forgotten when this process changes or ends them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._known: TTLCache[str, tuple[dict[str, Any], datetime]] | None = None

    def _cache(self) -> TTLCache[str, tuple[dict[str, Any], datetime]]:
        if self._known is None:  # made on first use, when the settings are known
            self._known = TTLCache(maxsize=100_000, ttl=settings.AUTH_USER_CACHE_SECONDS)
        return self._known

    def get(self, key: str) -> tuple[dict[str, Any], datetime] | None:
        """The session's data (a copy: the request may change its own) and its expiry."""
        if not settings.AUTH_USER_CACHE_SECONDS:
            return None
        with self._lock:
            known = self._cache().get(key)
        if known is None or known[1] <= timezone.now():
            return None
        return dict(known[0]), known[1]

    def add(self, key: str, data: dict[str, Any], expires: datetime) -> None:
        if settings.AUTH_USER_CACHE_SECONDS:
            with self._lock:
                self._cache()[key] = (dict(data), expires)

    def forget(self, key: str | None) -> None:
        if key is not None:
            with self._lock:
                if self._known is not None:
                    self._known.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._known = None


app_sessions = _AppSessions()


class SessionStore(db.SessionStore):
    """Django's database sessions (SESSION_ENGINE), with the app sessions remembered by the
    process that read them: an app's sync checks, in one prepared lookup, that its session
    still stands unchanged (its row, with the expiry every save moves) and reads its user's
    state with it, instead of reading and decoding the session and then loading the user."""

    # The state of the session's user, read with a remembered session (accounts.active.current_user
    # takes it).
    account_state: AccountState | None = None
    # The data and expiry a save wrote, as the row holds them.
    _written: tuple[dict[str, Any], datetime] | None = None

    def load(self) -> dict[str, Any]:
        key = self._session_key
        remembered = remembered_app_session(key) if key is not None else None
        if remembered is not None:
            data, self.account_state = remembered
            return data
        found = self._get_session_from_db()  # type: ignore[attr-defined]
        if found is None:
            return {}
        decoded: dict[str, Any] = self.decode(found.session_data)
        if decoded.get(SURFACE_SESSION_KEY) == APP and self._session_key is not None:
            app_sessions.add(self._session_key, decoded, found.expire_date)
        return decoded

    def create_model_instance(self, data: dict[str, Any]) -> Any:
        written = super().create_model_instance(data)
        self._written = (data, written.expire_date)
        return written

    def save(self, must_create: bool = False) -> None:
        app_sessions.forget(self._session_key)
        self._written = None
        super().save(must_create=must_create)
        if self._written is not None and self._session_key is not None:
            data, expires = self._written
            if data.get(SURFACE_SESSION_KEY) == APP:
                app_sessions.add(self._session_key, data, expires)

    def delete(self, session_key: str | None = None) -> None:
        app_sessions.forget(session_key if session_key is not None else self._session_key)
        super().delete(session_key)


def remembered_app_session(key: str) -> tuple[dict[str, Any], AccountState | None] | None:
    """The data of an app session this process remembers, while its row stands unchanged (the
    expiry every save moves), with its user's state, read in the same prepared lookup (None: no
    such user). None when it is not remembered, or is no longer as remembered (then forgotten).
    SessionStore.load's first try, and the fast path's (fastpath)."""
    known = app_sessions.get(key)
    if known is None:
        return None
    remembered, expires = known
    user_id = session_user_id(remembered.get(SESSION_KEY))
    rows = sql.fetch(_SESSION_STATE_SQL(), [user_id, key], _STATE, prepare=True)
    if rows and rows[0][0] == expires:  # the same row, unchanged (get checked expiry)
        return remembered, None if rows[0][1] is None else AccountState(*rows[0][1:])
    app_sessions.forget(key)
    return None


@functools.cache
def _SESSION_STATE_SQL() -> str:
    users = get_user_model()._meta.db_table
    return (
        f"SELECT s.expire_date, {account_state_sql('u')} FROM {Session._meta.db_table} s"
        f" LEFT JOIN {users} u ON u.id = %s WHERE s.session_key = %s"
    )


_STATE = sql.Columns(Session._meta.get_field("expire_date"), None, None, None)


def session_user_id(value: Any) -> Any:
    """A session's user id as the user model's key (None when it is not one)."""
    try:
        return get_user_model()._meta.pk.to_python(value)
    except ValidationError:
        return None


def remembered_session_user(
    data: Mapping[str, Any], state: AccountState | None
) -> AbstractBaseUser | None:
    """The user of an app session's `data` as django.contrib.auth.get_user finds it (active, and
    the session made under the account's current password), from this process's memory while
    the account's state is the same (accounts.active.current_user); `state`: read with the
    session already, if it was. None: not found so (Django's own check then decides)."""
    user_id = session_user_id(data.get(SESSION_KEY))
    remembered = None if user_id is None else current_user(user_id, state)
    if (
        remembered is not None
        and data.get(BACKEND_SESSION_KEY) in settings.AUTHENTICATION_BACKENDS
        and constant_time_compare(
            data.get(HASH_SESSION_KEY) or "", remembered.get_session_auth_hash()
        )
    ):
        return remembered
    return None


def _app_user(request: HttpRequest) -> Any:
    """The user of an app session (remembered_session_user), else as Django finds it."""
    session = request.session
    if session_user_id(session[SESSION_KEY]) is None:
        return AnonymousUser()
    remembered = remembered_session_user(session, getattr(session, "account_state", None))
    # Else Django's own check, which also ends a session made under another password.
    return remembered if remembered is not None else get_user(request)


def app_session_standing(data: Mapping[str, Any], path: str) -> bool:
    """Whether an app session's `data` may be used on `path` (the request's path_info): made on
    the app surface, the path one of the app APIs', and the app password it was made with, if
    any, still standing (_user_here's rules; a session that fails them is the view's to end)."""
    if data.get(SURFACE_SESSION_KEY) != APP or surface_of(path) != APP:
        return False
    app_password_id = data.get(APP_PASSWORD_SESSION_KEY)
    return app_password_id is None or app_password_stands(
        user_id=data.get(SESSION_KEY), app_password_id=app_password_id
    )


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
        surface = session.get(SURFACE_SESSION_KEY)
        if surface != surface_of(request.path_info):
            return AnonymousUser()
        if surface == APP:
            return _app_user(request)
    return get_user(request)


class SessionSurfaceMiddleware:
    """After Django's AuthenticationMiddleware, whose lazy `request.user` it replaces: a session
    signed in on another surface than the request's is nobody here (a session without a mark,
    made before sessions had one, is nobody anywhere), and one whose app password was revoked is
    ended. Lazy like Django's, so a request that never asks who it is never reads its session."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # Before any read of the account: a sign-in remembers its user only if no change of an
        # account was announced since (mark_signed_in_session).
        setattr(request, USERS_GENERATION, active_users.generation())
        if hasattr(request, "user"):  # not on /v1/: bearer tokens only, no session
            request.user = SimpleLazyObject(lambda: _user_here(request))  # type: ignore[assignment]
        return self.get_response(request)
