"""Add every feed of an OPML file to a user's subscriptions, by the rules of POST
/v1/subscriptions.opml.

The file may be larger than the API's body and feed limits: its feeds are added in batches of
MAX_ADD_ENTRIES through the same service, with a progress bar. Each batch is its own
transaction (the API adds a whole document in one), so a failure part-way keeps the batches
before it; running the command again adds the rest and changes nothing for those.
"""

from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from core.exceptions import InvalidInput
from subscriptions import opml, services
from subscriptions.management.commands.export_opml import progress_stream


class Command(BaseCommand):
    help = "Import an OPML file into a user's subscriptions (same rules as the API's add)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("username")
        parser.add_argument("file", help="The OPML file.")
        parser.add_argument("--no-progress", action="store_true", help="No progress bar.")

    def handle(self, *args: Any, username: str, file: str, **options: Any) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user named {username!r}")
        if not user.is_active:  # writes of an inactive account are refused (lock_user_writes)
            raise CommandError(f"{username!r} is deactivated: activate it first")
        try:
            feeds = opml.opml_parse(Path(file).read_bytes())
        except OSError as exc:
            raise CommandError(f"Cannot read {file}: {exc.strerror}") from exc
        except InvalidInput as exc:
            raise CommandError(f"{file}: {exc.message}") from exc

        added = 0
        failures: list[services.AddFailure] = []
        with tqdm(
            total=len(feeds),
            unit="feed",
            desc="Importing",
            file=progress_stream(self),
            disable=options["no_progress"],
        ) as progress:
            size = settings.MAX_ADD_ENTRIES
            for batch in (feeds[start : start + size] for start in range(0, len(feeds), size)):
                result = services.subscription_add_many(
                    user=user, entries=[services.AddEntry(feed_url=feed.url) for feed in batch]
                )
                added += len(result.success)
                failures += result.failure
                progress.update(len(batch))

        for failure in failures:
            self.stderr.write(f"Not added: {failure.feed_url}: {failure.message}")
        self.stdout.write(
            self.style.SUCCESS(f"Added {added} feed(s) to {username}; {len(failures)} failed.")
        )
