"""Behind PgBouncer in transaction mode (docs/operations.md, "PgBouncer"): a server connection
is a client's for one transaction only, so nothing of the service's may outlive one. The
setting that makes it so; tests/e2e/test_pgbouncer.py serves the hot paths through a pooler with
one server connection, and make test runs the API, gpodder, episodes, deletions and worker
slices through one too."""

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.db import connection

from tests import servers

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def one_server_connection(postgres_server: servers.Server | None) -> Any:
    """A PgBouncer in transaction mode with a single server connection, in front of the
    session's database (itself maybe behind the suite's pooler: a pooler chains)."""
    if postgres_server is None:
        pytest.skip("TEST_DATABASE_URL names a server this test cannot put a pooler in front of")
    with servers.pgbouncer(postgres_server, pool_size=1) as pooler:
        name = connection.settings_dict["NAME"]
        yield f"host={pooler.host} port={pooler.port} user=postgres dbname={name}"


def test_prepared_statements_break_behind_it(one_server_connection: str) -> None:
    """Why the setting exists: two clients preparing through one server connection collide."""
    first = psycopg.connect(one_server_connection, autocommit=True, prepare_threshold=0)
    second = psycopg.connect(one_server_connection, autocommit=True, prepare_threshold=0)
    try:
        first.execute("SELECT 1 + %s", [1])
        with pytest.raises(psycopg.errors.DuplicatePreparedStatement):
            second.execute("SELECT 2 + %s", [2])
    finally:
        first.close()
        second.close()


def _settings(**env: str) -> str:
    code = (
        "import django; django.setup(); from django.conf import settings; "
        "d = settings.DATABASES['default']; "
        "print(d['OPTIONS'].get('prepare_threshold'), d['DISABLE_SERVER_SIDE_CURSORS'])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={
            "PATH": os.environ["PATH"],
            "DJANGO_SETTINGS_MODULE": "config.settings.base",
            "SECRET_KEY": "a-production-secret-key-that-is-long-and-random-enough-0123456789",
            "DATABASE_URL": "postgres://opa@db.example/opa",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.stdout.strip() if done.returncode == 0 else done.stderr


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "5 False"),
        ({"DATABASE_POOL_MODE": "session"}, "5 False"),
        # Transaction mode wins over prepared statements asked for.
        ({"DATABASE_POOL_MODE": "transaction"}, "None True"),
        (
            {"DATABASE_POOL_MODE": "transaction", "DATABASE_PREPARED_STATEMENTS": "true"},
            "None True",
        ),
    ],
)
def test_the_pool_mode_setting(env: dict[str, str], expected: str) -> None:
    assert _settings(**env) == expected


def test_a_mistyped_pool_mode_stops_the_service_at_start() -> None:
    assert "DATABASE_POOL_MODE must be session or transaction" in _settings(
        DATABASE_POOL_MODE="transactions"
    )
