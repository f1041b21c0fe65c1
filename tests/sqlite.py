"""A script run on a new SQLite database in a process of its own, with the settings the service
reads (config.settings.base), for the rules that must hold on the home server's SQLite too."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_on_sqlite(script: str, folder: Path) -> None:
    """Run `script` with python on `folder`/db.sqlite3; it prints `ok` when every check held."""
    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "config.settings.base",
        "SECRET_KEY": "sqlite-script-test-secret-key-long-enough-0123456789",
        "DEBUG": "true",
        "DATABASE_URL": f"sqlite:///{folder / 'db.sqlite3'}",
        "FEED_CHECKS_ENABLED": "false",
    }
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("ok")
