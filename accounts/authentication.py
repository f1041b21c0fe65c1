"""Token authentication (product.md section 2) on djangorestframework-simplejwt.

Refresh tokens rotate: each refresh blacklists the token it used and hands out a new one.
"""

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from cachetools import TTLCache
from django.conf import settings
from django.contrib.auth import authenticate, get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import update_last_login
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from rest_framework_simplejwt.authentication import JWTAuthentication
from rest_framework_simplejwt.exceptions import AuthenticationFailed, InvalidToken, TokenError
from rest_framework_simplejwt.settings import api_settings
from rest_framework_simplejwt.token_blacklist.models import BlacklistedToken, OutstandingToken
from rest_framework_simplejwt.tokens import RefreshToken, Token

from core.exceptions import NotAuthorized


@dataclass(frozen=True)
class Tokens:
    access_token: str
    expires_in: int
    refresh_token: str
    refresh_expires: datetime


def _issue(user: AbstractBaseUser) -> Tokens:
    refresh = RefreshToken.for_user(user)
    return Tokens(
        access_token=str(refresh.access_token),
        expires_in=int(api_settings.ACCESS_TOKEN_LIFETIME.total_seconds()),
        refresh_token=str(refresh),
        refresh_expires=datetime.fromtimestamp(refresh["exp"], tz=UTC),
    )


def token_login(*, username: str, password: str) -> Tokens:
    if "\x00" in username + password:
        raise NotAuthorized()  # no account has one, and the database cannot be asked
    user = authenticate(username=username, password=password)
    if user is None:
        raise NotAuthorized()
    update_last_login(None, user)  # type: ignore[arg-type]
    return _issue(user)


def _verified(token: str) -> RefreshToken:
    try:
        return RefreshToken(token)  # type: ignore[arg-type]
    except TokenError as exc:  # bad signature, expired, blacklisted, malformed
        raise NotAuthorized() from exc


def token_refresh(*, refresh_token: str) -> Tokens:
    old = _verified(refresh_token)
    user = (
        get_user_model()
        .objects.filter(pk=old.get(api_settings.USER_ID_CLAIM), is_active=True)
        .first()
    )
    if user is None:
        raise NotAuthorized()
    with transaction.atomic():
        # Locked, so that of two refreshes racing with one token only the first succeeds.
        outstanding = OutstandingToken.objects.select_for_update().filter(jti=old["jti"]).first()
        if outstanding is None or BlacklistedToken.objects.filter(token=outstanding).exists():
            raise NotAuthorized()
        BlacklistedToken.objects.create(token=outstanding)
    return _issue(user)


def token_logout(*, refresh_token: str) -> None:
    _verified(refresh_token).blacklist()


class _ActiveUsers:
    """Ids of users recently found active, kept for `AUTH_USER_CACHE_SECONDS` per process.

    Reading the user on every request cost a database round trip and a quarter of a GET's CPU
    time. Only active users are kept, so a deactivation takes effect in every web process
    within the cache's lifetime, and at once in the process that made it (`forget`).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()  # gunicorn's gthread workers share the cache
        self._ids: TTLCache[Any, bool] | None = None

    def _cache(self) -> TTLCache[Any, bool]:
        if self._ids is None:  # made on first use, when the settings are known
            self._ids = TTLCache(maxsize=100_000, ttl=settings.AUTH_USER_CACHE_SECONDS)
        return self._ids

    def __contains__(self, user_id: Any) -> bool:
        if not settings.AUTH_USER_CACHE_SECONDS:
            return False
        with self._lock:
            return user_id in self._cache()

    def add(self, user_id: Any) -> None:
        if settings.AUTH_USER_CACHE_SECONDS:
            with self._lock:
                self._cache()[user_id] = True

    def forget(self, user_ids: Iterable[Any]) -> None:
        """Forget the users now, and again once the change commits: a request of this process
        reading the row before then would find them still active and remember them again."""
        user_ids = list(user_ids)
        self._forget(user_ids)
        transaction.on_commit(lambda: self._forget(user_ids))

    def _forget(self, user_ids: list[Any]) -> None:
        with self._lock:
            for user_id in user_ids:
                if self._ids is not None:
                    self._ids.pop(user_id, None)

    def clear(self) -> None:
        with self._lock:
            self._ids = None


active_users = _ActiveUsers()


@receiver(post_save, sender=settings.AUTH_USER_MODEL)
@receiver(post_delete, sender=settings.AUTH_USER_MODEL)
def _forget_changed_user(sender: Any, instance: AbstractBaseUser, **kwargs: Any) -> None:
    active_users.forget([instance.pk])


# The same token string always verifies the same way: a web process keeps the tokens it verified
# recently, with the time they expire, and checks only that time again. Verifying (PyJWT:
# decoding, the signature, the claims) took a fifth of a GET's CPU time, and an app sends the
# same token for an hour. Were access tokens ever revoked one by one (simplejwt's blacklist for
# them, CHECK_REVOKE_TOKEN), that check would have to run on every request, outside this cache.
_verified_tokens: TTLCache[bytes, tuple[Token, float]] = TTLCache(maxsize=4096, ttl=300)
_verified_lock = threading.Lock()


def forget_all() -> None:
    """Empties this process's caches of verified tokens and active users (tests)."""
    with _verified_lock:
        _verified_tokens.clear()
    active_users.clear()


def _expires(token: Token) -> float:
    """When (seconds since the epoch) simplejwt's check_exp starts refusing `token`."""
    leeway = token.get_token_backend().get_leeway()
    return float(token["exp"]) + leeway.total_seconds()


class BearerAuthentication(JWTAuthentication):
    """simplejwt's bearer authentication, checking that the token's user is active.

    Tokens verified recently are not verified again, only their expiry. The user check reads
    only the user's id, written out in SQL (the ORM's version cost a tenth of a GET), and is
    skipped while `active_users` remembers the user. Everything else about the user is loaded
    only if a request reads it.
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
        try:
            user_id = pk.to_python(validated_token[api_settings.USER_ID_CLAIM])
        except (KeyError, ValidationError) as exc:
            raise InvalidToken("Token contained no recognizable user identification") from exc
        if user_id not in active_users:
            with connection.cursor() as cursor:
                cursor.execute(
                    f"SELECT 1 FROM {model._meta.db_table}"
                    f" WHERE {pk.column} = %s AND is_active = %s",
                    [pk.get_db_prep_value(user_id, connection), True],
                )
                if cursor.fetchone() is None:
                    raise AuthenticationFailed("User not found or inactive", code="user_inactive")
            active_users.add(user_id)
        return model.from_db(connection.alias, [pk.attname], [user_id])
