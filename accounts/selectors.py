"""Reads about people: their app passwords, and whether a username is taken."""

from typing import Any

from django.contrib.auth import get_user_model

from accounts.models import AppPassword

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
