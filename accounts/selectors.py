"""Reads about people: their app passwords."""

from typing import Any

from accounts.models import AppPassword


def app_passwords_of(*, user: Any) -> list[AppPassword]:
    """The user's app passwords, the newest first."""
    return list(AppPassword.objects.filter(user=user).order_by("-created", "-id"))
