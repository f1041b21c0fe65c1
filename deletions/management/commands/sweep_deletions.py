"""Run the deletion sweep once: what Celery beat does every DELETION_SWEEP_INTERVAL seconds."""

from typing import Any

from django.core.management.base import BaseCommand

from deletions.services import deletion_sweep


class Command(BaseCommand):
    help = "Re-send deletions pending too long; fail those out of attempts."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--all",
            action="store_true",
            help="Send every pending deletion, however recently it was sent (at start-up, when "
            "no worker is running).",
        )

    def handle(self, *args: Any, all: bool, **options: Any) -> None:
        result = deletion_sweep(resend_after=0 if all else None)
        self.stdout.write(f"Deletion sweep: {result['resent']} resent, {result['failed']} failed")
