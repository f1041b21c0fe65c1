"""Test fixtures: a real PostgreSQL for the session, users, and authenticated API clients."""

import os
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.core.cache import cache
from hypothesis import settings as hypothesis_settings
from rest_framework.test import APIClient

from accounts import authentication as auth
from accounts.services import refresh_token_for
from api import throttles
from tests import servers
from tests.factories import UserFactory
from tests.helpers import Clock

# Hypothesis' 200 ms deadline fails an example that a loaded CI host or a GC pause slowed once;
# timings live in bench/. print_blob lets a failure seen only in CI be replayed here.
hypothesis_settings.register_profile("suite", deadline=None, print_blob=True)
hypothesis_settings.load_profile("suite")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[servers.Server | None]:
    """A PostgreSQL started for this session, unless TEST_DATABASE_URL names one; with
    TEST_PGBOUNCER set, PgBouncer in transaction mode in front of it, which the tests (and the
    servers and workers they start) then reach it through (make test's pooled slice)."""
    if os.environ.get("TEST_DATABASE_URL") or settings.HOME_SERVER:
        yield None  # a running server named, or the home slice's SQLite
        return
    with servers.postgres() as server:
        if not os.environ.get("TEST_PGBOUNCER"):
            yield server
            return
        assert settings.POOLED_BY_TRANSACTION, "TEST_PGBOUNCER needs DATABASE_POOL_MODE=transaction"
        with servers.pgbouncer(server) as pooler:
            yield pooler


@pytest.fixture(scope="session")
def django_db_modify_db_settings(
    postgres_server: servers.Server | None, django_db_modify_db_settings_parallel_suffix: None
) -> None:
    if postgres_server is not None:
        settings.DATABASES["default"].update(
            HOST=postgres_server.host, PORT=str(postgres_server.port)
        )


@pytest.fixture
def back_to_latest(transactional_db: None) -> Iterator[None]:
    """Whatever a test of migrations migrates to, later tests find the latest schema."""
    yield
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """The service clock, pinned so timestamps can be compared exactly."""
    fake = Clock()
    monkeypatch.setattr("core.clock.now", lambda: fake.now)
    return fake


@pytest.fixture(autouse=True)
def _clear_cache() -> Iterator[None]:
    """Throttle counters live in the cache (or Redis, and the process's share of them), verified
    tokens and active users in accounts.authentication's: each test starts with none."""
    cache.clear()
    auth.forget_all()
    throttles.forget()
    yield
    cache.clear()
    auth.forget_all()
    throttles.forget()


def client_for(user: Any) -> APIClient:
    client = APIClient()
    token = refresh_token_for(user).access_token
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


@pytest.fixture
def user(db: None) -> object:
    return UserFactory()


@pytest.fixture
def other_user(db: None) -> object:
    return UserFactory()


@pytest.fixture
def api(user: object) -> APIClient:
    """An API client carrying a real bearer token of `user`."""
    return client_for(user)


@pytest.fixture
def other_api(other_user: object) -> APIClient:
    return client_for(other_user)


@pytest.fixture
def anon() -> APIClient:
    return APIClient()
