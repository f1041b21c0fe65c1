"""Create a first staff account when there is none, printing its generated password once."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from accounts.selectors import USERNAME_TAKEN
from accounts.services import staff_ensure
from core.exceptions import InvalidInput


class Command(BaseCommand):
    help = "Create the staff account 'admin' with a generated password unless staff exist."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--username", default="admin")

    def handle(self, *args: Any, username: str, **options: Any) -> None:
        try:
            password = staff_ensure(username=username)
        except InvalidInput:  # another account has it, in this case or another
            raise CommandError(f"{USERNAME_TAKEN}: name another with --username") from None
        if password is None:
            self.stdout.write(
                "Staff account exists. Forgot its password? "
                f"python manage.py changepassword {username}"
            )
            return
        self.stdout.write(
            self.style.SUCCESS(
                f"Created staff account '{username}' with password: {password}\n"
                "(shown only this once: note it now)"
            )
        )
