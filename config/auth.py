"""Token authentication (product.md section 2) on djangorestframework-simplejwt.

Refresh tokens rotate: each refresh blacklists the token it used and hands out a new one.
"""

from dataclasses import dataclass
from datetime import UTC, datetime

from django.contrib.auth import authenticate, get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import update_last_login
from django.core.exceptions import ValidationError
from django.db import transaction
from rest_framework_simplejwt.authentication import JWTAuthentication
from rest_framework_simplejwt.exceptions import AuthenticationFailed, InvalidToken, TokenError
from rest_framework_simplejwt.settings import api_settings
from rest_framework_simplejwt.token_blacklist.models import BlacklistedToken, OutstandingToken
from rest_framework_simplejwt.tokens import RefreshToken, Token

from config.exceptions import NotAuthorized


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


class BearerAuthentication(JWTAuthentication):
    """simplejwt's bearer authentication, reading only whether the token's user is active.

    The check stays on every request, so a deactivated or removed user's tokens stop working
    at once; the query is written out because the ORM's version cost a tenth of a GET.
    Everything else about the user is loaded only if a request reads it.
    """

    # simplejwt types the user with an unbound TypeVar, which no override can satisfy.
    def get_user(self, validated_token: Token) -> AbstractBaseUser:  # type: ignore[override]
        model = get_user_model()
        try:
            user_id = model._meta.pk.to_python(validated_token[api_settings.USER_ID_CLAIM])
        except (KeyError, ValidationError) as exc:
            raise InvalidToken("Token contained no recognizable user identification") from exc
        active = model.objects.raw(
            f"SELECT {model._meta.pk.column} FROM {model._meta.db_table}"
            f" WHERE {model._meta.pk.column} = %s AND is_active = %s",
            [user_id, True],
        )
        user = next(iter(active), None)
        if user is None:
            raise AuthenticationFailed("User not found or inactive", code="user_inactive")
        return user
