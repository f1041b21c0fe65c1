"""A body over the limit always gets its 413, under gunicorn with the production settings: the
client, which sends its whole body before it reads the answer, must be able to read it; and a
body sent to a page is refused before anything stores it."""

import contextlib
import http.client
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from django.conf import settings
from django.db import connection

from tests.factories import UserFactory
from tests.servers import gunicorn_service, production_env

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("transactional_db")]

PASSWORD = "a long and unusual passphrase for the body limit"


@pytest.fixture(scope="module")
def spool(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the service would spool a large upload: watched by the tests."""
    return tmp_path_factory.mktemp("spool")


@pytest.fixture(scope="module")
def service(
    django_db_setup: None, spool: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[int]:
    """The service under gunicorn (config/gunicorn.py) on the tests' database, one for the
    module (each test makes a user of its own): its port."""
    env = production_env(
        "body-limit",
        connection.settings_dict,
        WEB_CONCURRENCY="2",
        LOG_LEVEL="WARNING",
        THROTTLE_LOGIN_RATE="1000/min",  # a login before each try
        TMPDIR=str(spool),
    )
    env.pop("REDIS_URL", None)
    with gunicorn_service(env, tmp_path_factory.mktemp("gunicorn") / "gunicorn.log") as port:
        yield port


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
    user: Any = UserFactory(with_deployed_password=PASSWORD)
    body = oversized(size)
    token = login(service, user.username)
    # A fresh connection each time, as reported (one login: a password check at the deployed
    # cost is a third of a second of CPU, and the answer to the body is what is tried).
    answers = [call(service, "POST", "/v1/subscriptions", body, token) for _ in range(tries)]
    statuses = [status for status, _ in answers]
    assert statuses == [413] * tries, [a for a in answers if a[0] != 413][:3]
    message = json.loads(answers[0][1])["message"]
    assert message == f"Request body too large: the limit is {settings.MAX_BODY_BYTES} bytes"
    assert not user.subscriptions.exists()


def spooled(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


@pytest.mark.parametrize("path", ["/login/", "/data/import/", "/admin/login/", "/register/"])
def test_a_huge_body_to_a_page_is_refused_before_it_is_stored(service, spool, path):
    """300 MB of multipart upload, anonymous: nothing may spool it to disk before the CSRF
    check (or a sign-in) refuses it. The upload is sent while the spool folder is watched."""
    size = 300 * 1024 * 1024
    boundary = "x" * 20
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {size}\r\n"
        f"Content-Type: multipart/form-data; boundary={boundary}\r\n\r\n"
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.opml"\r\n'
        "Content-Type: text/x-opml\r\n\r\n"
    ).encode()
    chunk = b"\0" * (1024 * 1024)
    most = 0
    with socket.create_connection(("127.0.0.1", service), timeout=30) as sock:
        sock.sendall(head)
        try:
            for _ in range(200):  # 200 MiB, or until the server stops reading
                sock.sendall(chunk)
                most = max(most, spooled(spool))
        except OSError:
            pass  # answered and closed: past BODY_DISCARD_BYTES it reads no more
        sock.settimeout(10)
        try:
            answer = sock.recv(4096)
        except OSError:
            answer = b""
    assert most == 0
    assert answer == b"" or answer.startswith(b"HTTP/1.1 413"), answer[:200]
    if answer:
        assert b"MAX_PAGE_BODY_BYTES" in answer


def test_a_body_just_over_the_page_limit_gets_its_413(service):
    body = b"username=alice&password=" + b"x" * settings.MAX_PAGE_BODY_BYTES
    conn = http.client.HTTPConnection("127.0.0.1", service, timeout=60)
    conn.request("POST", "/login/", body, {"Content-Type": "application/x-www-form-urlencoded"})
    response = conn.getresponse()
    assert response.status == 413
    text = response.read().decode()
    assert f"the limit is {settings.MAX_PAGE_BODY_BYTES} bytes (MAX_PAGE_BODY_BYTES)" in text


def held_open(port: int, folder: Path) -> int:
    """Bytes in files under `folder` that the server at `port` holds open: a temporary file
    has no name there (O_TMPFILE), only the worker's descriptor."""
    held = 0
    for server in psutil.process_iter(["cmdline"]):
        if f"127.0.0.1:{port}" not in " ".join(server.info["cmdline"] or []):
            continue
        for process in [server, *server.children()]:
            for fd in Path(f"/proc/{process.pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    if os.readlink(fd).startswith(str(folder)):
                        held += fd.stat().st_size
    return held


def history_head(size: int) -> bytes:
    return (
        f"POST /data/import-history/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {size}\r\n"
        "Content-Type: multipart/form-data; boundary=xxxxxxxx\r\n\r\n"
    ).encode()


def test_a_large_history_upload_is_received_then_refused_to_anyone_signed_out(service, spool):
    """The history file's path takes IMPORT_MAX_FILE_BYTES, received by the worker before the
    service can tell who sends it (into a temporary file past 64 KiB): signed out, the sign-in
    rule refuses it, and the temporary file is gone."""
    size = 6 * 1024 * 1024
    with socket.create_connection(("127.0.0.1", service), timeout=30) as sock:
        sock.sendall(history_head(size))
        sock.sendall(b"\0" * (size // 2))
        time.sleep(0.3)
        assert held_open(service, spool) >= size // 4  # on disk, not in the worker's memory
        sock.sendall(b"\0" * (size - size // 2))
        answer = b""
        while b"sign in" not in answer and (chunk := sock.recv(4096)):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"(MAX_PAGE_BODY_BYTES) until you sign in" in answer
    time.sleep(0.3)
    assert held_open(service, spool) == 0


def test_a_third_large_upload_at_once_is_told_to_come_back(service):
    """At most two bodies over 4 MiB are received at once by a worker (WEB_CONCURRENCY=2
    here: four in all), whoever sends them: the next one is told so, with Retry-After."""
    size = 8 * 1024 * 1024
    held = [socket.create_connection(("127.0.0.1", service), timeout=30) for _ in range(5)]
    try:
        for sock in held:
            sock.sendall(history_head(size) + b"\0" * 1000)
        answers = []
        for sock in held:
            sock.settimeout(2)
            try:
                answers.append(sock.recv(4096))
            except TimeoutError:
                answers.append(b"")  # still being received
    finally:
        for sock in held:
            sock.close()
    refused = [answer for answer in answers if answer]
    assert len(refused) >= 1, answers  # the kernel spreads five over two workers
    for answer in refused:
        assert answer.startswith(b"HTTP/1.1 503 Service Unavailable"), answer[:200]
        assert b"Retry-After: 60" in answer
        assert b"receiving 2 bodies over 4194304 bytes already" in answer


def test_a_received_body_lets_go_of_its_disk_when_its_request_fails(service, spool):
    """A head gunicorn refuses (a bare LF in it: 400) after the poller received its body into
    a temporary file: the file is closed with the connection, not at some later collection."""
    size = 3 * 1024 * 1024
    head = f"POST /data/import-history/ HTTP/1.1\nHost: x\nContent-Length: {size}\n\n".encode()
    for _ in range(4):
        with socket.create_connection(("127.0.0.1", service), timeout=30) as sock:
            sock.sendall(head + b"\0" * size)
            assert sock.recv(100).startswith(b"HTTP/1.1 400")
    time.sleep(0.5)
    assert held_open(service, spool) == 0


@pytest.fixture(scope="module")
def small_disk(django_db_setup: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """The service with no file of its own past 2 MB (a disk as good as full): its port."""
    env = production_env("small-disk", connection.settings_dict, WEB_CONCURRENCY="1")
    env.pop("REDIS_URL", None)
    log = tmp_path_factory.mktemp("gunicorn") / "gunicorn.log"
    with gunicorn_service(env, log, ("prlimit", f"--fsize={2 * 1024 * 1024}", "--")) as port:
        yield port


def test_a_body_that_cannot_be_kept_is_a_503_and_the_worker_serves_on(small_disk):
    size = 6 * 1024 * 1024
    with socket.create_connection(("127.0.0.1", small_disk), timeout=30) as sock:
        sock.sendall(history_head(size))
        with contextlib.suppress(OSError):
            sock.sendall(b"\0" * size)
        answer = sock.recv(4096)
    assert answer.startswith(b"HTTP/1.1 503 Service Unavailable"), answer[:200]
    assert b"could not keep the request's body (File too large)" in answer
    conn = http.client.HTTPConnection("127.0.0.1", small_disk, timeout=10)
    conn.request("GET", "/health")
    assert conn.getresponse().status == 200
