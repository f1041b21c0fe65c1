"""Write a user's current subscriptions as an OPML 2.0 file, as GET /v1/subscriptions.opml does."""

import sys
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from core import clock
from subscriptions import opml, selectors


class Command(BaseCommand):
    help = "Export a user's subscribed, not deleted subscriptions as OPML (to a file or stdout)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("username")
        parser.add_argument("-o", "--output", help="File to write; stdout when left out.")
        parser.add_argument("--no-progress", action="store_true", help="No progress bar.")

    def handle(self, *args: Any, username: str, output: str | None, **options: Any) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user named {username!r}")
        found = selectors.subscription_current(user=user).values_list("feed_url", flat=True)
        total = found.count()
        urls = tqdm(
            found.iterator(),
            total=total,
            unit="feed",
            desc="Exporting",
            file=progress_stream(self),
            disable=options["no_progress"],
        )
        document = opml.opml_render(
            feeds=(opml.OpmlFeed(url=url) for url in urls),
            created=clock.now(),
            owner=user.get_username(),
        )
        if output is None:
            self.stdout.write(document.decode(), ending="")
        else:
            Path(output).write_bytes(document)
            self.stderr.write(f"Wrote {total} feed(s) to {output}")


def progress_stream(command: BaseCommand) -> Any:
    """The stream under the command's stderr wrapper, which would end every tqdm update in \\n."""
    return getattr(command.stderr, "_out", sys.stderr)
