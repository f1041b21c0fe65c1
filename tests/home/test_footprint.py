"""What the home server's processes load (bench/HISTORY.md, "Footprint"): a package that the web
process never uses on the home layout stays out of its worker and of every manage.py command,
whatever else changes; and the errors of one loaded later are still caught."""

import json
import os
import subprocess
import sys
from pathlib import Path

from core import lazyredis

ROOT = Path(__file__).resolve().parents[2]

# redis-py: only by a process given REDIS_URL or REDIS_CACHE_URL (core.lazyredis), about 21 MB of
# a process and 0.3 s of every command. feedparser: only by the child that reads a feed
# (feedchecks.reader). cryptography: only to seal an import's password for a broker
# (imports.sealed).
# psycopg: only on PostgreSQL, though DRF imports django.contrib.postgres's fields, and with them
# psycopg, wherever it can (core.db.sqlite), 11 MB of the worker.
NOT_IN_THE_WEB_PROCESS = (
    "redis",
    "kombu.transport.redis",
    "feedparser",
    "cryptography",
    "psycopg",
    "django.contrib.postgres.fields",
)

# A process as the home server's worker is after its start and a command after its checks:
# Django set up, the WSGI app made, every URL pattern resolved, `manage.py check` run.
_LOADED = """
import json, os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")
import django
django.setup()
from django.core.management import call_command
from django.urls import get_resolver
import config.wsgi
get_resolver().url_patterns
call_command("check")
print(json.dumps(sorted(name for name, module in sys.modules.items() if module)))
"""


def loaded_modules(data: Path, **env: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", _LOADED],
        cwd=ROOT,
        env={"PATH": os.environ["PATH"], "DATA_DIR": str(data), **env},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_the_home_layout_loads_no_redis_client_feed_parser_cryptography_or_psycopg(
    tmp_path: Path,
) -> None:
    loaded = loaded_modules(tmp_path / "data")
    assert "django.contrib.admin" in loaded  # the process did load the app
    assert sorted(loaded.intersection(NOT_IN_THE_WEB_PROCESS)) == []


def test_on_postgresql_drf_has_its_postgres_fields(tmp_path: Path) -> None:
    """The other side: only SQLite refuses them; nothing connects to this address."""
    loaded = loaded_modules(
        tmp_path / "data",
        DATABASE_URL="postgres://nobody@127.0.0.1:1/none",
        SECRET_KEY="x" * 50,
        DEBUG="true",
    )
    assert {"psycopg", "django.contrib.postgres.fields"} <= loaded


def test_a_health_check_with_redis_named_loads_it(tmp_path: Path) -> None:
    """The other side: a Redis named is asked, so its client is loaded then, not at start."""
    probe = (
        "import os, sys; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings.base')\n"
        "import django; django.setup()\n"
        "from api.views import _check_broker\n"
        "print('redis' in sys.modules, _check_broker(), 'redis' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        env={
            "PATH": os.environ["PATH"],
            "DATA_DIR": str(tmp_path / "data"),
            "REDIS_URL": "redis://127.0.0.1:1/0",  # nothing listens on port 1
        },
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "error:", "ConnectionError", "True"]


def test_a_redis_error_is_caught_once_redis_is_loaded() -> None:
    import redis

    client = redis.Redis.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=0.5)
    caught = False
    try:
        client.ping()
    except lazyredis.error():
        caught = True
    assert caught
    assert lazyredis.error() is redis.RedisError


def test_before_redis_is_loaded_its_error_is_one_nothing_raises(tmp_path: Path) -> None:
    probe = (
        "import sys; from core import lazyredis\n"
        "print('redis' in sys.modules, issubclass(lazyredis.error(), ValueError))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.split() == ["False", "False"], done.stderr
