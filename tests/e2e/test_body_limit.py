"""A body over the limit always gets its 413, under gunicorn with the production settings: the
client, which sends its whole body before it reads the answer, must be able to read it."""

import http.client
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection

from tests.factories import UserFactory
from tests.servers import ROOT, free_port

pytestmark = pytest.mark.usefixtures("transactional_db")

PASSWORD = "a long and unusual passphrase for the body limit"


@pytest.fixture
def service(tmp_path: Path) -> Iterator[int]:
    """The service under gunicorn (config/gunicorn.py) on the tests' database: its port."""
    db = connection.settings_dict
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.base",
        "SECRET_KEY": "body-limit-test-secret-key-long-enough-for-hs256-signing",
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "false",
        "WEB_CONCURRENCY": "2",
        "LOG_LEVEL": "WARNING",
        "THROTTLE_LOGIN_RATE": "1000/min",  # a login before each try
    }
    env.pop("REDIS_URL", None)
    log = tmp_path / "gunicorn.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.py",
             "--bind", f"127.0.0.1:{port}", "config.wsgi"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while call(port, "GET", "/v1/")[0] != 200:
            assert server.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        yield port
    finally:
        server.terminate()
        server.wait(timeout=30)


def call(
    port: int, method: str, path: str, body: bytes | None = None, token: str = ""
) -> tuple[int, Any]:
    """On a fresh connection, as a new client would: (0, error) when no answer could be read."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        conn.request(method, path, body, headers)
        response = conn.getresponse()
        return response.status, response.read()
    except OSError as exc:
        return 0, repr(exc)
    finally:
        conn.close()


def login(port: int, username: str) -> str:
    body = json.dumps({"username": username, "password": PASSWORD}).encode()
    status, answer = call(port, "POST", "/v1/auth/login", body)
    assert status == 200, answer
    return str(json.loads(answer)["access_token"])


def oversized(size: int) -> bytes:
    entry = b'{"feed_url": "https://example.com/feed.xml"},'
    entries = entry * (size // len(entry) + 1)
    return b'{"subscriptions": [' + entries[:-1] + b"]}"


@pytest.mark.parametrize(
    ("size", "tries"), [(settings.MAX_BODY_BYTES + 100, 30), (20 * 1024 * 1024, 5)]
)
def test_every_oversized_body_gets_its_413(service, size, tries):
    user: Any = UserFactory(with_password=PASSWORD)
    body = oversized(size)
    answers = []
    for _ in range(tries):
        token = login(service, user.username)  # a fresh connection each time, as reported
        answers.append(call(service, "POST", "/v1/subscriptions", body, token))
    statuses = [status for status, _ in answers]
    assert statuses == [413] * tries, [a for a in answers if a[0] != 413][:3]
    message = json.loads(answers[0][1])["message"]
    assert message == f"Request body too large: the limit is {settings.MAX_BODY_BYTES} bytes"
    assert not user.subscriptions.exists()
