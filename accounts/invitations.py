"""Invitation links, when registration is by invitation (REGISTRATION=invitation;
docs/public-instance.md, "Registration"): made by staff, or by members where
INVITATIONS_BY_MEMBERS allows; each makes one account, within INVITATION_DAYS, and dies with
the account that made it or once withdrawn."""

import hashlib
import secrets
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction

from accounts import services
from accounts.models import Invitation
from core import clock
from core.exceptions import InvalidInput, NotFound

INVITATION_DEAD = (
    "This invitation does not work: it was used already, it is too old, or it was withdrawn. "
    "Ask the person who sent it for another"
)
# What an invitation's token carries: 32 random bytes, in the link.
_TOKEN_BYTES = 32


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def invitations_open() -> bool:
    """Whether accounts are made by invitation on this server."""
    return bool(settings.REGISTRATION == "invitation")


def may_invite(user: Any) -> bool:
    """Whether `user` may make invitation links: staff, or any member where the server lets
    members invite."""
    if not invitations_open() or not user.is_active:
        return False
    return bool(user.is_staff or settings.INVITATIONS_BY_MEMBERS)


def invitation_create(*, user: Any) -> tuple[Invitation, str]:
    """A new invitation of the user's, with the token its link carries, which is not kept and
    cannot be shown again. InvalidInput when the user may not invite, or holds
    MAX_OPEN_INVITATIONS unused ones."""
    if not may_invite(user):
        message = "Invitations are not yours to make on this server"
        raise InvalidInput(message, errors={"invitation": [message + "."]})
    token = secrets.token_urlsafe(_TOKEN_BYTES)
    now = clock.now()
    with transaction.atomic():
        # Counted under the lock of the user's row, so that forms sent at once stay within it.
        services.user_lock_standing(user.pk)
        limit = settings.MAX_OPEN_INVITATIONS
        if _unused(user).count() >= limit:
            message = (
                f"You have {limit} invitations waiting to be used, the most an account may have "
                "(MAX_OPEN_INVITATIONS): withdraw one first"
            )
            raise InvalidInput(message, errors={"invitation": [message + "."]})
        made = Invitation.objects.create(
            digest=_digest(token),
            made_by=user,
            created=now,
            expires=now + timedelta(days=settings.INVITATION_DAYS),
        )
    return made, token


def _unused(user: Any) -> Any:
    return Invitation.objects.filter(made_by=user, used__isnull=True, expires__gt=clock.now())


def invitations_of(*, user: Any) -> list[Invitation]:
    """The user's invitations waiting to be used, then those used, newest first."""
    waiting = list(_unused(user).order_by("-created"))
    used = Invitation.objects.filter(made_by=user, used__isnull=False).select_related("used_by")
    return waiting + list(used.order_by("-used")[: settings.MAX_OPEN_INVITATIONS])


def invitation_withdraw(*, user: Any, invitation_id: int) -> None:
    """Withdraw one of the user's unused invitations: its link no longer works. NotFound when it
    is not theirs, was used, or was withdrawn already."""
    deleted, _ = Invitation.objects.filter(
        pk=invitation_id, made_by=user, used__isnull=True
    ).delete()
    if not deleted:
        raise NotFound()


def _usable(token: str, *, lock: bool) -> Invitation:
    if not invitations_open() or not isinstance(token, str) or len(token) > 200:
        raise NotFound(INVITATION_DEAD)
    found = Invitation.objects.filter(
        digest=_digest(token),
        used__isnull=True,
        expires__gt=clock.now(),
        made_by__is_active=True,
    )
    invitation = (found.select_for_update() if lock else found).first()
    if invitation is None:
        raise NotFound(INVITATION_DEAD)
    return invitation


def invitation_read(*, token: str) -> Invitation:
    """The invitation a link carries, while it can make an account; NotFound (INVITATION_DEAD)
    when it is not one, was used or withdrawn, is too old, its maker turned off, or registration
    is not by invitation."""
    return _usable(token, lock=False)


def user_register_invited(*, token: str, username: str, password: str) -> AbstractBaseUser:
    """The account an invitation makes (registration's rules, services.user_register), the
    invitation used by it in the same transaction: two people using one link at once make one
    account. NotFound as invitation_read; InvalidInput as user_register, the invitation kept."""
    with transaction.atomic():
        invitation = _usable(token, lock=True)
        user = services.user_register(username=username, password=password)
        invitation.used = clock.now()
        invitation.used_by = user  # type: ignore[assignment]
        invitation.save(update_fields=["used", "used_by"])
    return user
