"""Bearer token authentication (docs/api.md, "Authentication") on djangorestframework-simplejwt,
with the web process's cache of verified tokens (and of active users: accounts.active)."""

import threading
import time
from typing import Any

from cachetools import TTLCache
from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import connection
from django.http import HttpRequest
from django.utils.crypto import constant_time_compare
from rest_framework_simplejwt.authentication import JWTAuthentication
from rest_framework_simplejwt.exceptions import AuthenticationFailed, InvalidToken
from rest_framework_simplejwt.settings import api_settings
from rest_framework_simplejwt.tokens import Token

from accounts import active

# The same token string always verifies the same way: a web process keeps the tokens it verified
# recently, with the time they expire, and checks only that time again: an app sends the same token
# for an hour, and verifying it (PyJWT: decoding, the signature, the claims) is a large share of a
# GET (bench/README.md, "accounts.authentication._verified_tokens"). Were access tokens ever revoked
# one by one (simplejwt's blacklist for them, CHECK_REVOKE_TOKEN), that check would have to run on
# every request, outside this cache.
_verified_tokens: TTLCache[bytes, tuple[Token, float]] = TTLCache(maxsize=4096, ttl=300)
_verified_lock = threading.Lock()


# The claim naming the app password a token was issued for (docs/api.md, "Authentication").
APP_PASSWORD_CLAIM = "app_password"
# The claim binding a token to the password the account had when it was issued: a new password,
# set by any route (the pages, the admin, `changepassword`), ends every token issued before it,
# as it ends every session (Django's session hash).
PASSWORD_CLAIM = "pwd"


def forget_verified_tokens() -> None:
    """Empties this process's cache of verified tokens."""
    with _verified_lock:
        _verified_tokens.clear()


def _expires(token: Token) -> float:
    """When (seconds since the epoch) simplejwt's check_exp starts refusing `token`."""
    leeway = token.get_token_backend().get_leeway()
    return float(token["exp"]) + leeway.total_seconds()


class BearerAuthentication(JWTAuthentication):
    """simplejwt's bearer authentication, checking that the token's user is active.

    Tokens verified recently are not verified again, only their expiry. The user check reads
    only the user's password hash (for the token's PASSWORD_CLAIM), written out in SQL (cheaper
    than the ORM's query), and is skipped while `active.active_users` remembers the user.
    Everything else about the user is loaded only if a request reads it.
    """

    def get_validated_token(self, raw_token: bytes) -> Token:
        with _verified_lock:
            verified = _verified_tokens.get(raw_token)
        if verified is None:
            token = super().get_validated_token(raw_token)
            with _verified_lock:
                _verified_tokens[raw_token] = (token, _expires(token))
            return token
        token, expires = verified
        if time.time() >= expires:
            raise InvalidToken("Token 'exp' claim has expired")  # check_exp's words
        return token

    # simplejwt types the user with an unbound TypeVar, which no override can satisfy.
    def get_user(self, validated_token: Token) -> AbstractBaseUser:  # type: ignore[override]
        model = get_user_model()
        pk = model._meta.pk
        user_id = _user_id(validated_token)
        issued_under = validated_token.get(PASSWORD_CLAIM)
        if not isinstance(issued_under, str):
            raise InvalidToken("Token is not bound to the account's password")
        app_password_id = validated_token.get(APP_PASSWORD_CLAIM)
        if app_password_id is not None:
            # Issued for an app password: checked on every request, never remembered, so that
            # revoking it ends the app's tokens at once in every process.
            if not active.app_password_stands(
                user_id=user_id, app_password_id=app_password_id, password_mark_was=issued_under
            ):
                raise AuthenticationFailed("App password revoked", code="app_password_revoked")
        else:
            mark = active.active_users.mark(user_id)
            if mark is None:
                generation = active.active_users.generation()
                with connection.cursor() as cursor:
                    cursor.execute(
                        f"SELECT password FROM {model._meta.db_table}"
                        f" WHERE {pk.column} = %s AND is_active = %s",
                        [pk.get_db_prep_value(user_id, connection), True],
                    )
                    row = cursor.fetchone()
                if row is None:
                    raise AuthenticationFailed("User not found or inactive", code="user_inactive")
                mark = active.password_mark(row[0])
                active.active_users.add(user_id, mark, generation)
            if not constant_time_compare(mark, issued_under):
                raise AuthenticationFailed(
                    "The account's password has changed: sign in again", code="password_changed"
                )
        return _loaded(user_id)


def _user_id(token: Token) -> Any:
    pk = get_user_model()._meta.pk
    try:
        user_id = pk.to_python(token[api_settings.USER_ID_CLAIM])
        # Within the column's range, as the statement that reads the user binds it: SQLite's
        # driver refuses an integer past 64 bits outright (an OverflowError, not no row).
        pk.run_validators(user_id)
    except (KeyError, ValidationError) as exc:
        raise InvalidToken("Token contained no recognizable user identification") from exc
    return user_id


_BEARER = BearerAuthentication()


def known_bearer_user(request: HttpRequest) -> AbstractBaseUser | None:
    """The user BearerAuthentication would find for `request` without reading anything: its
    token verified here a moment ago and unexpired, not issued for an app password (whose
    standing is read on every request), for an account this process found active a moment ago
    under the password the token was issued under. None: the view's to check (fastpath)."""
    header = _BEARER.get_header(request)  # type: ignore[arg-type]
    try:
        raw = None if header is None else _BEARER.get_raw_token(header)
    except AuthenticationFailed:
        return None
    with _verified_lock:
        verified = None if raw is None else _verified_tokens.get(raw)
    if verified is None or time.time() >= verified[1]:
        return None
    token = verified[0]
    issued_under = token.get(PASSWORD_CLAIM)
    if token.get(APP_PASSWORD_CLAIM) is not None or not isinstance(issued_under, str):
        return None
    user_id = _user_id(token)  # InvalidToken, an APIException: the fast path passes it on
    mark = active.active_users.mark(user_id)
    if mark is None or not constant_time_compare(mark, issued_under):
        return None
    return _loaded(user_id)


def _loaded(user_id: Any) -> AbstractBaseUser:
    """The user, with only their id loaded: everything else is read if a request reads it."""
    model = get_user_model()
    return model.from_db(connection.alias, [model._meta.pk.attname], [user_id])
