"""Import a person's history into their account (docs/imports.md): from files (OPML, a
gpodder.net episode-actions file, this service's own export, each told by its content), or from
another server (the gpodder.net API or Nextcloud's, found by asking).

    manage.py import_history alice gpodder-net-episodes.json subscriptions.opml
    IMPORT_PASSWORD=... manage.py import_history alice --server https://gpodder.net --username al

The same import as the "Your data" page's, through the same services: running it again adds
nothing; a run cut off midway leaves whole batches, and running it again completes it.
"""

import getpass
import os
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from core.exceptions import InvalidInput
from core.text import readable
from imports.files import file_source
from imports.remote import Account, ImportFailed, server_source
from imports.services import MAX_TEXT, Summary, history_import
from subscriptions.management.commands.export_opml import progress_stream


class Command(BaseCommand):
    help = (
        "Import subscriptions, devices and episode actions from files into a user's account: "
        "OPML, a gpodder.net episode-actions JSON file, or this service's export."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("username")
        parser.add_argument("files", nargs="*", metavar="file")
        parser.add_argument("--server", help="Another sync server's address, to import from.")
        parser.add_argument(
            "--username",
            dest="remote_user",
            help="The account on --server; its password is read from IMPORT_PASSWORD, or asked.",
        )
        parser.add_argument(
            "--protocol",
            choices=["auto", "gpodder", "nextcloud"],
            default="auto",
            help="The API --server speaks: found by asking (auto), or named.",
        )
        parser.add_argument("--no-progress", action="store_true", help="No progress bar.")

    def handle(self, *args: Any, username: str, files: list[str], **options: Any) -> None:
        if not files and not options["server"]:
            raise CommandError("Name files to import, or --server and --username")
        if options["server"] and not options["remote_user"]:
            raise CommandError("--server needs --username, the account on that server")
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user named {username!r}")
        if not user.is_active:  # writes of an inactive account are refused
            raise CommandError(f"{username!r} is deactivated: activate it first")
        # Every file read and checked before anything is written: one bad file changes nothing.
        with ExitStack() as stack:
            sources = []
            for name in files:
                try:
                    handle = stack.enter_context(Path(name).open("rb"))
                except OSError as exc:
                    raise CommandError(f"Cannot read {name}: {exc.strerror}") from exc
                try:
                    found = file_source(handle, max_actions=settings.IMPORT_MAX_ACTIONS)
                    sources.append((name, found))
                except InvalidInput as exc:
                    raise CommandError(f"{name}: {readable(exc.message, MAX_TEXT)}") from exc
            for name, source in sources:
                self.stdout.write(f"{name}: {source.kind}")
                self._imported(user, source, options["no_progress"])
        if options["server"]:
            account = Account(
                server=options["server"],
                username=options["remote_user"],
                password=os.environ.get("IMPORT_PASSWORD") or getpass.getpass("Password: "),
                protocol=options["protocol"],
            )
            try:
                with server_source(account) as source:
                    self.stdout.write(f"{options['server']}: {source.kind}")
                    self._imported(user, source, options["no_progress"])
            except ImportFailed as exc:
                # The message may quote what the server sent: no control character reaches
                # the terminal.
                raise CommandError(
                    f"{options['server']}: {readable(exc.message, MAX_TEXT)}"
                ) from None

    def _imported(self, user: Any, source: Any, quiet: bool) -> None:
        with tqdm(
            total=source.action_count,
            unit="action",
            desc="Importing",
            file=progress_stream(self),
            disable=quiet or not source.action_count,
        ) as bar:

            def told(summary: Summary) -> None:
                bar.update(summary.actions_read - bar.n)

            summary = history_import(user=user, source=source, progress=told)
            # Paged answers repeat a few actions, counted ahead: the bar ends full.
            bar.total = summary.actions_read
            bar.refresh()
        for refusal in summary.refusals:
            self.stderr.write(f"Refused: {refusal.what}: {refusal.reason}")
        if summary.refused > len(summary.refusals):
            self.stderr.write(f"... and {summary.refused - len(summary.refusals)} more refused")
        self.stdout.write(self.style.SUCCESS(described(summary)))


def described(summary: Summary) -> str:
    """The summary in one line."""
    return (
        f"{summary.devices} device(s); podcasts: {summary.podcasts_added} added, "
        f"{summary.podcasts_merged} merged into ones you had, {summary.podcasts_already} "
        f"already there; episode actions: {summary.actions_imported} imported, "
        f"{summary.actions_already} already there; {summary.refused} refused."
    )
