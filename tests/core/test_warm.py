"""The web process is ready before its first request (core.warm): making the WSGI app loads the
URLconf with every view, and the cache's and the broker's clients where they are Redis's, so
gunicorn's master does it once for every worker it forks; nothing connects to anything."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_MADE = """
import json, sys
import config.wsgi
print(json.dumps(sorted(name for name, module in sys.modules.items() if module)))
"""
VIEWS = {"gpodder.views", "episodes.views", "nextcloud.views", "subscriptions.views"}


def modules_after_the_app_is_made(**env: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", _MADE],
        cwd=ROOT,
        env={"PATH": os.environ["PATH"], **env},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_the_full_layout_loads_its_views_and_redis_clients_before_any_request() -> None:
    loaded = modules_after_the_app_is_made(
        DJANGO_SETTINGS_MODULE="config.settings.base",
        SECRET_KEY="x" * 50,
        # Nothing listens on port 1: the app is made without a connection to either.
        DATABASE_URL="postgres://nobody@127.0.0.1:1/none",
        REDIS_URL="redis://127.0.0.1:1/0",
    )
    assert VIEWS | {"rest_framework.views", "redis", "kombu.transport.redis"} <= loaded


def test_the_home_layout_loads_its_views_and_still_no_redis(tmp_path: Path) -> None:
    loaded = modules_after_the_app_is_made(DATA_DIR=str(tmp_path / "data"))
    assert loaded >= VIEWS
    assert "redis" not in loaded
