"""The PostgreSQL connection: a health check (core/db/postgresql) with no round trip while the
server keeps a connection, yet a connection the server closed is never used for a request; and
hot queries prepared on the server."""

import os
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import close_old_connections, connection, connections

from tests.factories import UserFactory


@pytest.fixture
def kept(db: None) -> Iterator[Any]:
    """A second connection to the test database, as a web process keeps one between requests."""
    wrapper = connections.create_connection("default")
    wrapper.ensure_connection()
    yield wrapper
    wrapper.close()


def backend_pid(wrapper: Any) -> int:
    return int(wrapper.connection.info.backend_pid)


def last_query(pid: int) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT query FROM pg_stat_activity WHERE pid = %s", [pid])
        return str(cursor.fetchone()[0])


def wait_readable(wrapper: Any) -> None:
    """Until the server's message reaches the socket: another backend sends it when scheduled."""
    readable, _, _ = select.select([wrapper.connection.fileno()], [], [], 5)
    assert readable, "nothing reached the socket within 5 s"


def terminate(pid: int) -> None:
    """As a restart, a failover or idle_session_timeout would: the server ends the session."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s, 5000)", [pid])  # waits for it to end


def test_the_check_of_a_kept_connection_sends_nothing(kept):
    with kept.cursor() as cursor:
        cursor.execute("SELECT 'the last query'")

    assert kept.is_usable()

    assert last_query(backend_pid(kept)) == "SELECT 'the last query'"  # not SELECT 1


def test_a_notification_on_a_kept_connection_leaves_it_usable(kept):
    """Something to read is not always a goodbye: then SELECT 1 decides."""
    with kept.cursor() as cursor:
        cursor.execute("LISTEN opa_test")
    other = connections.create_connection("default")  # outside the test's transaction
    with other.cursor() as cursor:
        cursor.execute("NOTIFY opa_test")
    other.close()
    wait_readable(kept)

    assert kept.is_usable()
    assert last_query(backend_pid(kept)) == "SELECT 1"  # asked, since the socket had news


def test_a_connection_the_server_ended_is_not_usable(kept):
    terminate(backend_pid(kept))
    wait_readable(kept)

    assert not kept.is_usable()


def test_a_connection_closed_here_is_not_usable(kept):
    kept.connection.close()

    assert not kept.is_usable()


@pytest.fixture
def kept_between_requests(transactional_db: None) -> Iterator[None]:
    """Production's connection settings: kept for a minute, checked before each request."""
    saved = dict(connection.settings_dict)
    connection.close()
    connection.settings_dict.update(CONN_MAX_AGE=60, CONN_HEALTH_CHECKS=True)
    yield
    connection.close()
    connection.settings_dict.clear()
    connection.settings_dict.update(saved)


def test_a_request_after_the_server_ended_the_connection_succeeds(kept_between_requests):
    from tests.helpers import client_for

    api = client_for(UserFactory())
    assert api.get("/v1/subscriptions").status_code == 200
    pid = backend_pid(connection)
    other = connections.create_connection("default")
    with other.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s, 5000)", [pid])
    other.close()
    wait_readable(connection)  # the server's goodbye

    close_old_connections()  # what request_started does in a server; the test client does not
    response = api.get("/v1/subscriptions")

    assert response.status_code == 200, response.content
    assert backend_pid(connection) != pid


def test_a_query_run_five_times_is_prepared_on_the_server(db):
    """The server plans the GET's lookup by a unique key once per connection (settings:
    prepared statements), and never a query whose plan depends on its values."""
    from tests.helpers import client_for

    user = UserFactory()
    api = client_for(user)
    guid = api.post(
        "/v1/subscriptions", {"subscriptions": [{"feed_url": "https://a.example/f"}]}, format="json"
    ).json()["success"][0]["guid"]
    for _ in range(6):
        assert api.get(f"/v1/subscriptions/{guid}").status_code == 200
        assert api.get("/v1/subscriptions?since=2000-01-01T00:00:00Z").status_code == 200

    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [row[0] for row in cursor.fetchall()]

    assert any("subscriptionguid g ON g.subscription_id = s.id" in sql for sql in prepared)
    # Neither the list, whose best plan depends on `since`, nor the ORM's queries (quoted names).
    assert not any("COUNT(*)" in sql or '"subscriptions_' in sql for sql in prepared), prepared


@pytest.mark.parametrize(("value", "expected"), [(None, True), ("false", False)])
def test_prepared_statements_are_on_unless_turned_off(value, expected):
    env = {
        "PATH": os.environ["PATH"],
        "DJANGO_SETTINGS_MODULE": "config.settings.base",
        "SECRET_KEY": "a-production-secret-key-that-is-long-and-random-enough-0123456789",
        "DATABASE_URL": "postgres://opa@db.example/opa",
    }
    if value is not None:
        env["DATABASE_PREPARED_STATEMENTS"] = value
    code = (
        "import django; django.setup(); from django.conf import settings; "
        "d = settings.DATABASES['default']; print(d['ENGINE'], d['OPTIONS'])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).resolve().parents[2], env=env, capture_output=True, text=True,
        timeout=60, check=True,
    ).stdout  # fmt: skip

    engine, options = out.split(" ", 1)
    assert engine == "core.db.postgresql"
    assert ("'prepare_threshold': 5" in options) is expected
