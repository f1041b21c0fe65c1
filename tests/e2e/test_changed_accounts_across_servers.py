"""A changed account across web processes (docs/api.md, "Access tokens"): two gunicorn servers
with the production settings, standing for two web hosts, on the test database and one Redis.
Each remembers the users it found active; a new password or a deactivation, made by a third
process (this one, as the account page or the admin would), ends the access tokens issued
before it on both at once, in every one of their web workers."""

import http.client
import json
import os
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from accounts import active as auth
from accounts.services import user_deactivate
from tests import servers
from tests.factories import UserFactory
from tests.hashers import deployed_hash
from tests.servers import gunicorn_service

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("transactional_db")]

PASSWORD = "an old and unusual passphrase of two hosts"
NEW_PASSWORD = "a new and unusual passphrase of two hosts"
# Requests per server and check, each on a new connection: the kernel hands each to one of the
# server's workers (SO_REUSEPORT), so every worker answers some of them.
TRIES = 12


def call(port: int, method: str, path: str, body: Any = None, token: str = "") -> tuple[int, Any]:
    """One request on a new connection: its status and JSON answer."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        conn.request(method, path, None if body is None else json.dumps(body), headers)
        response = conn.getresponse()
        data = response.read()
    finally:
        conn.close()
    return response.status, json.loads(data) if data else None


def statuses(ports: list[int], token: str) -> dict[int, list[int]]:
    """The token used TRIES times on each server, every time on a new connection."""
    return {
        port: [call(port, "GET", "/v1/subscriptions", token=token)[0] for _ in range(TRIES)]
        for port in ports
    }


def login(port: int, username: str, password: str) -> str:
    status, answer = call(
        port, "POST", "/v1/auth/login", {"username": username, "password": password}
    )
    assert status == 200, answer
    return str(answer["access_token"])


@pytest.fixture
def redis_cache(redis_server: servers.RedisServer, settings: Any) -> Iterator[str]:
    """This process on the servers' Redis, so that what it changes is announced to them."""
    if redis_server.process is None:
        redis_server.start()
    settings.REDIS_CACHE_URL = redis_server.url
    yield redis_server.url
    auth.active_users.changes.stop()


@pytest.fixture
def two_servers(redis_cache: str, tmp_path: Path, settings: Any) -> Iterator[list[int]]:
    """Two web hosts, as production runs them, on the test database and the same Redis."""
    db = connection.settings_dict
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.base",
        "SECRET_KEY": "two-servers-test-secret-key-long-enough-for-hs256-signing-0123",
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "DATABASE_POOL_MODE": settings.DATABASE_POOL_MODE,
        # The broker's database; the cache's, and the announcements, on the same server.
        "REDIS_URL": redis_cache,
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "false",
        "WEB_CONCURRENCY": "2",
        "LOG_LEVEL": "WARNING",
        "THROTTLE_LOGIN_RATE": "10000/min",
        "THROTTLE_USER_RATE": "100000/min",
    }
    env.pop("REDIS_CACHE_URL", None)
    env.pop("DEBUG", None)
    with ExitStack() as stack:
        yield [
            stack.enter_context(gunicorn_service(env, tmp_path / f"gunicorn-{host}.log"))
            for host in ("a", "b")
        ]


def signed_in_on_both(ports: list[int], password: str = PASSWORD) -> tuple[Any, str]:
    """A user, and an access token of theirs that every worker of both servers took (so each
    remembers the user)."""
    user: Any = UserFactory(with_deployed_password=password)
    token = login(ports[0], user.username, password)
    assert statuses(ports, token) == {port: [200] * TRIES for port in ports}
    return user, token


def test_a_new_password_ends_the_old_access_tokens_on_every_server_at_once(two_servers):
    user, token = signed_in_on_both(two_servers)

    user.password = deployed_hash(NEW_PASSWORD)  # what the account page's form stores
    user.save()

    assert statuses(two_servers, token) == {port: [401] * TRIES for port in two_servers}
    # The new password signs in and works everywhere.
    fresh = login(two_servers[1], user.username, NEW_PASSWORD)
    assert statuses(two_servers, fresh) == {port: [200] * TRIES for port in two_servers}


def test_a_deactivation_ends_the_access_tokens_on_every_server_at_once(two_servers):
    staff = UserFactory(is_staff=True)
    user, token = signed_in_on_both(two_servers)

    assert user_deactivate(user_ids=[user.pk], acting_user=staff) == 1  # the admin's action

    assert statuses(two_servers, token) == {port: [401] * TRIES for port in two_servers}
