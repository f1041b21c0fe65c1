"""Django's createsuperuser, refusing a username another account has in another case, as every
surface that makes accounts does (accounts.selectors.USERNAME_TAKEN).

Django's auth app, listed before this one in INSTALLED_APPS, provides the command of this name:
AccountsConfig.ready puts this one in its place."""

from typing import Any

from django.contrib.auth.management.commands import createsuperuser
from django.core.management.base import CommandError
from django.db import IntegrityError

from accounts.selectors import USERNAME_TAKEN, username_taken


class Command(createsuperuser.Command):
    def _validate_username(self, username: Any, verbose_field_name: Any, database: Any) -> Any:
        """Django's check, whose match is exact, and then the case-insensitive one: asked
        again when interactive, refused otherwise."""
        # Django's, which its type stubs leave out.
        error = super()._validate_username(  # type: ignore[misc]
            username, verbose_field_name, database
        )
        if error is None and username and username_taken(username=username):
            return f"Error: {USERNAME_TAKEN}."
        return error

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            super().handle(*args, **options)
        except IntegrityError:  # made a moment ago, in this case or another (accounts 0003)
            raise CommandError(f"{USERNAME_TAKEN}.") from None
