"""Copy the home server's SQLite database while it serves (docs/self-hosting.md, "Backups").

SQLite's online backup copies a consistent snapshot page by page, with writers going on in
between; a plain copy of the file (and its WAL) while the server writes could be torn.
"""

import os
import sqlite3
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Copy the SQLite database to FILE while the server runs (the secret key: copy it too)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("file", help="Where to write the copy; must not exist yet.")

    def handle(self, *args: Any, file: str, **options: Any) -> None:
        database = settings.DATABASES["default"]
        if database["ENGINE"] != "django.db.backends.sqlite3":
            raise CommandError("Not on SQLite: back PostgreSQL up with pg_dump")
        target = Path(file)
        if target.exists():
            raise CommandError(f"{target} exists: name a new file")
        try:
            # Its owner's alone, as the database is: it holds every session key.
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except OSError as exc:
            raise CommandError(f"Cannot write {target}: {exc.strerror}") from None
        try:
            source = sqlite3.connect(f"file:{database['NAME']}?mode=ro", uri=True, timeout=20)
            copy = sqlite3.connect(target)
        except sqlite3.Error as exc:
            target.unlink(missing_ok=True)
            raise CommandError(f"Cannot open the database or {target}: {exc}") from None
        try:
            with copy:
                source.backup(copy, pages=1024)  # a batch at a time: writers wait only briefly
        except sqlite3.Error as exc:
            target.unlink(missing_ok=True)
            raise CommandError(f"The copy failed: {exc}") from None
        finally:
            copy.close()
            source.close()
        self.stdout.write(f"Copied {database['NAME']} to {target}")
