"""The service under gunicorn with the production settings, behind PgBouncer in transaction mode
with a single server connection for every client (docs/operations.md, "PgBouncer"): with
DATABASE_POOL_MODE=transaction, many app connections syncing at once all get their answers; in
session mode (prepared statements, as a direct connection is served) the same load fails, which
shows the pooler really shares its connection."""

import base64
import http.client
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from episodes.models import EpisodeAction
from tests import servers
from tests.factories import UserFactory
from tests.helpers import subscribe
from tests.servers import gunicorn_service

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("transactional_db")]

PASSWORD = "a long and unusual passphrase behind the pooler"


@pytest.fixture
def pooler(postgres_server: servers.Server | None) -> Iterator[servers.Server]:
    if postgres_server is None:
        pytest.skip("TEST_DATABASE_URL names a server this test cannot put a pooler in front of")
    with servers.pgbouncer(postgres_server, pool_size=1) as found:
        yield found


def serve(pooler: servers.Server, tmp_path: Path, mode: str) -> Any:
    db = connection.settings_dict
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.base",
        "SECRET_KEY": "pgbouncer-test-secret-key-long-enough-for-hs256-signing-0123",
        "DATABASE_URL": f"postgres://{db['USER']}@{pooler.host}:{pooler.port}/{db['NAME']}",
        "DATABASE_POOL_MODE": mode,
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "false",
        "WEB_CONCURRENCY": "2",
        "LOG_LEVEL": "CRITICAL",
        "THROTTLE_LOGIN_RATE": "10000/min",
    }
    env.pop("REDIS_URL", None)
    return gunicorn_service(env, tmp_path / f"gunicorn-{mode}.log")


def sync_rounds(port: int, username: str, guid: str, app: int, rounds: int) -> list[int]:
    """An app's sync, `rounds` times on one kept-alive connection: GET one on /v1/ (a token),
    a gpodder pull and an upload of a play (Basic then the cookie). The statuses."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    basic = "Basic " + base64.b64encode(f"{username}:{PASSWORD}".encode()).decode()

    def call(method: str, path: str, body: Any = None, **headers: str) -> tuple[int, bytes]:
        data = None if body is None else json.dumps(body).encode()
        conn.request(method, path, data, {"Content-Type": "application/json", **headers})
        response = conn.getresponse()
        return response.status, response.read()

    statuses = []
    status, answer = call("POST", "/v1/auth/login", {"username": username, "password": PASSWORD})
    statuses.append(status)
    token = json.loads(answer)["access_token"] if status == 200 else ""
    for n in range(rounds):
        statuses.append(
            call("GET", f"/v1/subscriptions/{guid}", Authorization=f"Bearer {token}")[0]
        )
        device = f"app{app}"
        statuses.append(
            call(
                "GET", f"/api/2/subscriptions/{username}/{device}.json?since=0", Authorization=basic
            )[0]
        )
        play = {
            "podcast": "https://pooled.example/feed.xml",
            "episode": f"https://pooled.example/{app}/{n}.mp3",
            "action": "play",
            "position": n,
            "device": device,
        }
        statuses.append(
            call("POST", f"/api/2/episodes/{username}.json", [play], Authorization=basic)[0]
        )
    conn.close()
    return statuses


def load(port: int, username: str, guid: str) -> list[int]:
    found: list[list[int]] = [[] for _ in range(4)]
    threads = [
        threading.Thread(
            target=lambda a=app: found[a].extend(sync_rounds(port, username, guid, a, 15))
        )
        for app in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    return [status for statuses in found for status in statuses]


def test_the_hot_paths_through_one_shared_server_connection(pooler, tmp_path):
    user: Any = UserFactory(username="pooled", with_deployed_password=PASSWORD)
    guid = str(subscribe(user, "https://pooled.example/feed.xml").guid)
    with serve(pooler, tmp_path, "transaction") as port:
        statuses = load(port, "pooled", guid)
    assert len(statuses) == 4 * (1 + 15 * 3)
    assert set(statuses) == {200}
    # Every upload stored, once.
    assert EpisodeAction.objects.filter(user=user).count() == 4 * 15


def test_session_mode_fails_behind_it(pooler, tmp_path):
    """The setting is what makes the difference: the same load in session mode gets errors."""
    user: Any = UserFactory(username="pooled", with_deployed_password=PASSWORD)
    guid = str(subscribe(user, "https://pooled.example/feed.xml").guid)
    with serve(pooler, tmp_path, "session") as port:
        statuses = load(port, "pooled", guid)
    assert any(status >= 500 for status in statuses), statuses
