"""Fixtures of every folder's tests: a real PostgreSQL for the session, the clock, users and
their clients (API, gpodder apps, pages, the admin), and a loopback feed server.

A fixture that tests of more than one folder use lives here, found by pytest: no test module
imports one. What the tests import (helpers, constants) lives in helper modules:
tests/helpers.py, tests/factories.py, tests/servers.py, and a folder's own helpers.py."""

import gc
import os
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.core.cache import cache
from django.test import Client
from hypothesis import settings as hypothesis_settings
from rest_framework.test import APIClient

from accounts.basic import credentials
from api import throttles
from core.db import later
from subscriptions.models import Subscription
from tests import servers
from tests.factories import UserFactory
from tests.feedchecks.feedserver import FeedServer
from tests.helpers import PASSWORD, Clock, basic_app, client_for, forget_all, subscribe
from tests.mailserver import Mailbox, smtp_server
from tests.web.helpers import PASSWORD as PAGES_PASSWORD

# Hypothesis' 200 ms deadline fails an example that a loaded CI host or a GC pause slowed once;
# timings live in bench/. print_blob lets a failure seen only in CI be replayed here.
hypothesis_settings.register_profile("suite", deadline=None, print_blob=True)
hypothesis_settings.load_profile("suite")

# The test process makes and drops hundreds of thousands of objects a minute (ORM rows, requests,
# examples), and with Python's default thresholds the collector ran about 5,000 times in 1,000
# tests, 5% of their CPU. Collecting young objects a hundred times less often halves that; what
# the tests free by reference counting is freed as before. The servers and workers they start
# keep the defaults, as in production.
gc.set_threshold(100_000, 50, 100)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """The notes a test's requests left to be written after the answer (core.db.later) are
    written before its database is emptied: they belong to it, not to the next test."""
    later.flush()


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
    tokens, active users and app sessions in accounts' (forget_all): each test starts with
    none."""
    cache.clear()
    forget_all()
    throttles.forget()
    yield
    cache.clear()
    forget_all()
    throttles.forget()


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


# --- The gpodder and Nextcloud apps: alice and bob sign in with PASSWORD ------------------------


# The gpodder API remembers Basic credentials it verified: each test starts with none.
@pytest.fixture(autouse=True)
def _forget_credentials() -> Any:
    credentials.clear()
    yield
    credentials.clear()


@pytest.fixture
def alice(db: None) -> Any:
    return UserFactory(username="alice", with_password=PASSWORD)


@pytest.fixture
def bob(db: None) -> Any:
    return UserFactory(username="bob", with_password=PASSWORD)


@pytest.fixture
def app(alice: Any) -> APIClient:
    """A gpodder app of alice's that sends Basic on every request (as Kasts does)."""
    return basic_app("alice")


@pytest.fixture
def plain_http_cookies(settings: Any) -> None:
    """The live server speaks plain HTTP: cookies marked Secure would not come back."""
    settings.SESSION_COOKIE_SECURE = False
    settings.CSRF_COOKIE_SECURE = False


# --- The pages: person and stranger sign in with tests/web/helpers.py's PASSWORD ----------------


@pytest.fixture
def person(db: None) -> Any:
    return UserFactory(username="alice", with_password=PAGES_PASSWORD)


@pytest.fixture
def stranger(db: None) -> Any:
    return UserFactory(username="mallory", with_password=PAGES_PASSWORD)


@pytest.fixture
def page(person: Any) -> Client:
    """A browser signed in as `person` (Django's session, as the sign-in page makes it)."""
    client = Client()
    client.force_login(person)
    return client


# --- The admin: staff signed in, and a subscription each of alice and bob -----------------------


@pytest.fixture
def staff(db: None) -> Any:
    return UserFactory(username="staff", is_staff=True, is_superuser=True)


@pytest.fixture
def admin_client(staff: Any) -> Client:
    client = Client()
    client.force_login(staff)
    return client


@pytest.fixture
def alpha(alice: Any) -> Subscription:
    return subscribe(alice, "https://alpha.example/feed.xml")


@pytest.fixture
def beta(bob: Any) -> Subscription:
    return subscribe(bob, "https://beta.example/podcast?format=rss")


# --- Feeds --------------------------------------------------------------------------------------


@pytest.fixture
def feed_server() -> Iterator[FeedServer]:
    server = FeedServer().start()
    yield server
    server.stop()


# --- Mail: a real SMTP server, and the settings that send to it -----------------------------------

MAIL_SITE = "http://sync.example.test"


@pytest.fixture
def mailbox(settings: Any) -> Iterator[Mailbox]:
    """EMAIL_URL pointing at a real SMTP server started for the test (tests/mailserver.py),
    whose mailbox the test reads; the links in mail lead to MAIL_SITE."""
    with smtp_server() as box:
        settings.MAIL_ENABLED = True
        settings.PUBLIC_URL = MAIL_SITE
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST = "127.0.0.1"
        settings.EMAIL_PORT = box.port
        settings.EMAIL_HOST_USER = ""
        settings.EMAIL_HOST_PASSWORD = ""
        settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
        settings.EMAIL_TIMEOUT = 5
        settings.DEFAULT_FROM_EMAIL = "Podcast sync <noreply@sync.example.test>"
        yield box
