"""Reads about people: their app passwords, whether a username is taken, and whether the
account's password is a one-time one staff handed over."""

from typing import Any

from django.contrib.auth import get_user_model
from django.core import signing
from django.utils.crypto import constant_time_compare

from accounts.active import password_mark
from accounts.models import AppPassword, OneTimePassword

# What every surface that makes or renames an account answers for a username another account
# has, in this case or another (registration, the admin, createsuperuser, ensure_staff).
USERNAME_TAKEN = "That username is already taken"


def app_passwords_of(*, user: Any) -> list[AppPassword]:
    """The user's app passwords, the newest first."""
    return list(AppPassword.objects.filter(user=user).order_by("-created", "-id"))


def username_taken(*, username: str, other_than: Any = None) -> bool:
    """Whether an account (other than the one of pk `other_than`) has `username`, whatever its
    case: the match the database's unique index on the folded username settles a race by
    (accounts migration 0003)."""
    users = get_user_model().objects.filter(username__iexact=username)
    return (users.exclude(pk=other_than) if other_than is not None else users).exists()


def password_is_one_time(*, user: Any) -> bool:
    """Whether the user's password now is one staff made and handed over (the row's mark is of
    this very password: one set since, whichever way, is the person's own)."""
    mark = OneTimePassword.objects.filter(user_id=user.pk).values_list("mark", flat=True).first()
    return mark is not None and constant_time_compare(mark, password_mark(user.password))


# Signed by Django (SECRET_KEY, with this salt and a timestamp): the sign-in page hands it to the
# form where the person chooses their own password, which takes it back within TICKET_SECONDS.
TICKET_SALT = "accounts.one-time-password"
TICKET_SECONDS = 30 * 60


def one_time_ticket(*, user: Any) -> str | None:
    """When the user's password is a one-time one, the ticket that lets its person choose their
    own (accounts.services.password_choose) without typing it again; else None. It names the
    password it was given for, so a password set since (reset again, say) voids it."""
    if not password_is_one_time(user=user):
        return None
    return signing.dumps({"user": user.pk, "mark": password_mark(user.password)}, salt=TICKET_SALT)
