"""The pages' static files, collected where whitenoise serves them from (STATIC_ROOT)."""

import contextlib
import hashlib
import os
from pathlib import Path

from django.conf import settings
from django.contrib.staticfiles import finders
from django.core.management import call_command


def collect_static() -> None:
    """collectstatic, only when a static file changed since it last ran: it post-processes every
    file each time, which takes seconds a restart should not (bench/HISTORY.md, "The home
    server")."""
    digest = hashlib.sha256()
    for finder in finders.get_finders():
        for path, storage in sorted(finder.list([]), key=lambda found: found[0]):
            stat = os.stat(storage.path(path))
            digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    stamp = Path(settings.STATIC_ROOT) / ".sources"
    manifest = Path(settings.STATIC_ROOT) / "staticfiles.json"
    with contextlib.suppress(OSError):
        if manifest.exists() and stamp.read_text() == digest.hexdigest():
            return
    call_command("collectstatic", interactive=False, verbosity=0)
    stamp.write_text(digest.hexdigest())
