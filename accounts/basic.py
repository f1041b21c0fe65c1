"""HTTP Basic for the apps' protocols (the gpodder.net API and the Nextcloud gPodder Sync API):
the account's username with its password or an app password (docs/gpodder-api.md,
"Authentication"; docs/nextcloud.md, "Logging in").

A password check is Argon2, tens of milliseconds by design, and Kasts sends Basic on every
request: a process remembers the credentials it verified for GPODDER_CREDENTIAL_CACHE_SECONDS,
keyed by an HMAC of them (nothing that would log in is kept), and still reads the user on each
request (its state, accounts.active.current_user), so a changed password or a
deactivation ends them at once in every process (the password hash they were verified against is
compared, by an HMAC of it, each time). An app
password is looked up again on each request instead, and so is the one a session was made with
(accounts.sessions): revoking it ends its app's access at once.
"""

import binascii
import hashlib
import hmac
import threading
from base64 import b64decode
from collections.abc import Mapping
from typing import Any

from cachetools import TTLCache
from django.conf import settings
from django.contrib.auth import SESSION_KEY, login
from django.contrib.auth.base_user import AbstractBaseUser
from django.http import HttpRequest
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed, Throttled
from rest_framework.request import Request

from accounts.active import AccountState, app_password_stands, current_user
from accounts.services import app_authenticate
from accounts.sessions import APP, APP_PASSWORD_SESSION_KEY, SURFACE_SESSION_KEY, session_user_id
from accounts.throttles import count_login_attempt, refuse_while_throttled
from api.browsers import refuse_cross_site

MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"


def _digest(*parts: str) -> bytes:
    key = hashlib.sha256(f"gpodder-credentials:{settings.SECRET_KEY}".encode()).digest()
    message = "\x00".join(parts).encode("utf-8", "surrogatepass")
    return hmac.new(key, message, hashlib.sha256).digest()


class _Credentials:
    """Credentials this process verified: HMAC of (username, password) -> the user's id, an
    HMAC of the password hash it was verified against, and the app password's id (None for the
    account's own password)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._known: TTLCache[bytes, tuple[Any, bytes, int | None]] | None = None

    def _cache(self) -> TTLCache[bytes, tuple[Any, bytes, int | None]]:
        if self._known is None:  # made on first use, when the settings are known
            self._known = TTLCache(maxsize=10_000, ttl=settings.GPODDER_CREDENTIAL_CACHE_SECONDS)
        return self._known

    def user(
        self, username: str, password: str, read: tuple[Any, AccountState] | None = None
    ) -> tuple[AbstractBaseUser, int | None] | None:
        """The active user these credentials were verified for, if they still hold (the same
        username and password hash: a rename or a new password ends them; for an app password,
        the app password still there), with the app password's id. `read`: a user's id and
        state read already (with the request's session), used when it is that user's."""
        if not settings.GPODDER_CREDENTIAL_CACHE_SECONDS:
            return None
        key = _digest(username, password)
        with self._lock:
            known = self._cache().get(key)
        if known is None:
            return None
        user_id, password_hash, app_password_id = known
        user = current_user(user_id, read[1] if read is not None and read[0] == user_id else None)
        if (
            user is None
            or user.get_username() != username
            or (
                app_password_id is None
                and not hmac.compare_digest(_digest(user.password), password_hash)
            )
            or (
                app_password_id is not None
                and not app_password_stands(user_id=user_id, app_password_id=app_password_id)
            )
        ):
            with self._lock:
                self._cache().pop(key, None)
            return None
        return user, app_password_id

    def remember(
        self, username: str, password: str, user: AbstractBaseUser, app_password_id: int | None
    ) -> None:
        if settings.GPODDER_CREDENTIAL_CACHE_SECONDS:
            with self._lock:
                self._cache()[_digest(username, password)] = (
                    user.pk,
                    _digest(user.password),
                    app_password_id,
                )

    def clear(self) -> None:
        with self._lock:
            self._known = None


credentials = _Credentials()


def _basic_credentials(encoded: str) -> tuple[str, str]:
    try:
        raw = b64decode(encoded.strip(), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise AuthenticationFailed("Malformed Basic credentials") from exc
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        decoded = raw.decode("latin-1")  # what older clients send, as DRF reads it too
    username, colon, password = decoded.partition(":")
    if not colon or "\x00" in decoded:
        raise AuthenticationFailed("Malformed Basic credentials")
    return username, password


def _read_with_session(request: Request) -> tuple[Any, AccountState] | None:
    """The user's id and state read with the request's app session, when it came with one (as
    Kasts sends its cookie with Basic): the credentials' check then needs no lookup of its own,
    and the session is read once either way (the view asks whether it is this user's)."""
    session = getattr(request._request, "session", None)
    if session is None or session.session_key is None:
        return None
    user_id = session_user_id(session.get(SESSION_KEY))  # reads the session
    state = getattr(session, "account_state", None)
    if user_id is None or state is None:
        return None
    return user_id, state


def basic_user(request: Request, encoded: str) -> tuple[AbstractBaseUser, int | None]:
    """The user of Basic credentials (`encoded`: what follows "Basic "), and the id of the app
    password they are (None: the account's own password): remembered ones at once, others
    checked, a failure counted; all refused while the shared login throttle locks the username
    out, remembered ones too. AuthenticationFailed when they are wrong. Both apps' protocols
    authenticate with it."""
    username, password = _basic_credentials(encoded)
    refuse_while_throttled(request, username)
    known = credentials.user(username, password, _read_with_session(request))
    if known is not None:
        return known
    found = app_authenticate(request._request, username=username, password=password)
    if found is None:
        count_login_attempt(request, username)
        raise AuthenticationFailed("Wrong username or password")
    credentials.remember(username, password, *found)
    return found


def known_basic_user(
    request: HttpRequest, encoded: str, read: tuple[Any, AccountState] | None
) -> tuple[AbstractBaseUser, int | None] | None:
    """The fast path's (fastpath) basic_user: the user of Basic credentials this process
    verified and that still hold, and the app password's id; `read`: the user's id and state
    read with the request's session. None for anything else (malformed, not known here, the
    username locked out), which the view decides as basic_user does, counting what it must."""
    try:
        username, password = _basic_credentials(encoded)
        refuse_while_throttled(request, username)
    except (AuthenticationFailed, Throttled):
        return None
    return credentials.user(username, password, read)


def app_session_of(data: Mapping[str, Any], user: Any, app_password_id: int | None) -> bool:
    """Whether a session's `data` is the app session Basic credentials of `user` (and of that
    app password) would make: an app sending both needs no session written again."""
    return (
        data.get(SESSION_KEY) == str(user.pk)
        and data.get(SURFACE_SESSION_KEY) == APP
        and data.get(APP_PASSWORD_SESSION_KEY) == app_password_id
    )


class BasicThenSessionAuthentication(BaseAuthentication):
    """The gpodder.net API's: HTTP Basic (the account's username and its password or an app
    password), else the session cookie a successful Basic authentication set (`accepted`). No
    CSRF token: the cookie is SameSite=Lax, and a request another site made a browser send is
    refused (403) before either is read, since a browser sends the Basic credentials it was
    once given with it. No 401 asks a browser for them (api.browsers). `request.app_password_id`
    names the app password used (None: none)."""

    def authenticate(self, request: Request) -> tuple[AbstractBaseUser, None] | None:
        refuse_cross_site(request)
        django_request = request._request
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if header[:6].lower() == "basic ":
            user, app_password_id = self._basic_user(request, header[6:])
            request.by_basic = True  # type: ignore[attr-defined]
            request.app_password_id = app_password_id  # type: ignore[attr-defined]
            return user, None
        # Only a session an app made here counts, and only while its app password stands
        # (accounts.sessions.SessionSurfaceMiddleware): a browser's is nobody on these paths.
        by_session = getattr(django_request, "user", None)
        if by_session is not None and by_session.is_authenticated:
            app_password_id = django_request.session.get(APP_PASSWORD_SESSION_KEY)
            request.app_password_id = app_password_id  # type: ignore[attr-defined]
            return by_session, None
        return None

    def _basic_user(self, request: Request, encoded: str) -> tuple[AbstractBaseUser, int | None]:
        return basic_user(request, encoded)

    def authenticate_header(self, request: Request) -> str:
        return f'Basic realm="{settings.GPODDER_REALM}"'

    def accepted(self, request: Request) -> None:
        """The request passed the view's checks (api.protocols): a successful Basic
        authentication sets the session cookie, unless it came with the app session of this very
        user (an app sending both writes no session again)."""
        session = request._request.session
        app_password_id = getattr(request, "app_password_id", None)
        if getattr(request, "by_basic", False) and not app_session_of(
            session, request.user, app_password_id
        ):
            login(request._request, request.user, backend=MODEL_BACKEND)  # type: ignore[arg-type]
            # The session remembers the app password it was made with: revoking it ends it.
            if app_password_id is None:
                session.pop(APP_PASSWORD_SESSION_KEY, None)
            else:
                session[APP_PASSWORD_SESSION_KEY] = app_password_id


class BasicOnlyAuthentication(BaseAuthentication):
    """The Nextcloud gPodder Sync API's: HTTP Basic only, on every request (no session is read
    or written), never from a request another site made a browser send (403; no 401 asks a
    browser for credentials: api.browsers). `request.app_password_id` names the app password
    used (None: the account's own password)."""

    def authenticate(self, request: Request) -> tuple[AbstractBaseUser, None] | None:
        refuse_cross_site(request)
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if header[:6].lower() != "basic ":
            return None
        user, app_password_id = basic_user(request, header[6:])
        request.app_password_id = app_password_id  # type: ignore[attr-defined]
        return user, None

    def authenticate_header(self, request: Request) -> str:
        return f'Basic realm="{settings.GPODDER_REALM}"'
