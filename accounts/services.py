"""What people and staff do with accounts: log in, refresh and log out with tokens, and staff's
bootstrap and (de)activation of users.

Tokens come from djangorestframework-simplejwt. Refresh tokens rotate: each refresh blacklists
the token it used and hands out a new one (docs/api.md, "Authentication").
"""

from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.contrib.auth import authenticate, get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import update_last_login
from django.db import transaction
from django.utils.crypto import get_random_string
from rest_framework_simplejwt.exceptions import TokenError
from rest_framework_simplejwt.settings import api_settings
from rest_framework_simplejwt.token_blacklist.models import BlacklistedToken, OutstandingToken
from rest_framework_simplejwt.tokens import RefreshToken

from accounts.authentication import active_users
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


def user_deactivate(*, user_ids: Collection[Any], acting_user: Any) -> int:
    """Deactivate the users, except `acting_user` (a staff member locking themselves out by a
    slip of the checkbox); returns how many changed. Their refresh tokens are refused at once,
    their access tokens within AUTH_USER_CACHE_SECONDS (each web process's cache of active
    users)."""
    leaving = [pk for pk in user_ids if pk != acting_user.pk]
    changed = get_user_model().objects.filter(pk__in=leaving).update(is_active=False)
    active_users.forget(leaving)  # update() sends no signal
    return changed


def user_activate(*, user_ids: Collection[Any]) -> int:
    """Let the users log in again; returns how many changed."""
    return get_user_model().objects.filter(pk__in=user_ids).update(is_active=True)


def staff_ensure(*, username: str) -> str | None:
    """Create the staff account `username` unless staff exist; return its generated password,
    or None when nothing was created."""
    users = get_user_model().objects
    if users.filter(is_staff=True).exists():
        return None
    # Letters and digits only (142 bits): a leading '-' or '_' from token_urlsafe is easy to
    # lose when copying the password off a terminal by double-click.
    password = get_random_string(24)
    users.create_superuser(username=username, email="", password=password)
    return password
