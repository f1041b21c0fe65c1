"""Create a first staff account when there is none, printing its generated password once."""

import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


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
        password = secrets.token_urlsafe(18)
        users.create_superuser(username=username, email="", password=password)
        self.stdout.write(
            self.style.SUCCESS(
                f"Created staff account '{username}' with password: {password}\n"
                "(shown only this once: note it now)"
            )
        )
