"""Create a first staff account when there is none, printing its generated password once."""

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.utils.crypto import get_random_string


class Command(BaseCommand):
    help = "Create the staff account 'admin' with a generated password unless staff exist."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--username", default="admin")

    def handle(self, *args: Any, username: str, **options: Any) -> None:
        users = get_user_model().objects
        if users.filter(is_staff=True).exists():
            self.stdout.write(
                "Staff account exists. Forgot its password? "
                f"python manage.py changepassword {username}"
            )
            return
        # Letters and digits only (142 bits): a leading '-' or '_' from token_urlsafe is easy to
        # lose when copying the password off a terminal by double-click.
        password = get_random_string(24)
        users.create_superuser(username=username, email="", password=password)
        self.stdout.write(
            self.style.SUCCESS(
                f"Created staff account '{username}' with password: {password}\n"
                "(shown only this once: note it now)"
            )
        )
