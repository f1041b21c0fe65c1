"""Run the deletion sweep once: what Celery beat does every DELETION_SWEEP_INTERVAL seconds."""

from typing import Any

from django.core.management.base import BaseCommand

from deletions.services import deletion_sweep


class Command(BaseCommand):
    help = "Re-send deletions pending too long; fail those out of attempts."

    def handle(self, *args: Any, **options: Any) -> None:
        result = deletion_sweep()
        self.stdout.write(f"Deletion sweep: {result['resent']} resent, {result['failed']} failed")
