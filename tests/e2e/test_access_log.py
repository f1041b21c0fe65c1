"""gunicorn's access log, once turned on (`--access-logfile`), keeps no Nextcloud poll token
(nextcloud.logs; docs/nextcloud.md, "Logging in"): a poll sent with `?token=` is logged with the
value replaced, whatever part of the line would hold it."""

import http.client
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection

from tests.servers import gunicorn_service, production_env

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("transactional_db")]

SECRET = "PollTokenThatMustNotBeLogged0123456789abcdefghijklmnopqrstuvwxyzABCD"


@pytest.fixture
def service(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """The service under gunicorn with the production settings and its access log on stdout,
    which goes to the log file: its port, and the log."""
    env = production_env(
        "access-log",
        connection.settings_dict,
        WEB_CONCURRENCY="1",
        GUNICORN_CMD_ARGS="--access-logfile -",
    )
    env.pop("REDIS_URL", None)
    env.pop("DEBUG", None)
    log = tmp_path / "gunicorn.log"
    with gunicorn_service(env, log) as port:
        yield port, log


def send(port: int, method: str, path: str, **headers: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request(method, path, b"", headers)
    status = conn.getresponse().status
    conn.close()
    return status


def logged(log: Path, requests: int) -> str:
    """The log once it holds a line for each of `requests` requests sent by the test. gunicorn
    writes a request's line after its answer has gone, and its threads in any order: the last
    request's line may come before the one ahead of it. The readiness checks' `GET /v1/` lines
    are not the test's, so they are not counted."""

    def lines() -> int:
        text = log.read_text(errors="replace")
        return text.count(' HTTP/1.1" ') - text.count('"GET /v1/ HTTP/1.1" ')

    deadline = time.monotonic() + 10
    while lines() < requests:
        assert time.monotonic() < deadline, log.read_text(errors="replace")
        time.sleep(0.1)
    return log.read_text(errors="replace")


def test_a_polls_token_is_not_in_the_access_log(service: tuple[int, Path]) -> None:
    port, log = service
    polls = [
        f"/index.php/login/v2/poll?token={SECRET}",
        f"/login/v2/poll?since=1&token={SECRET}&x=1",
        f"/index.php/login/v2/poll?tok%65n={SECRET}",  # the name as Django decodes it
    ]
    for path in polls:
        referer = f"https://sync.example.com/index.php/login/v2/poll?token={SECRET}"
        assert send(port, "POST", path, Referer=referer) == 404
    assert send(port, "GET", "/v1/capabilities?end=1") == 200

    text = logged(log, len(polls) + 1)

    assert SECRET not in text
    assert '"POST /index.php/login/v2/poll?token=[redacted] HTTP/1.1" 404' in text
    assert "/login/v2/poll?since=1&token=[redacted]&x=1 " in text
    assert "/index.php/login/v2/poll?tok%65n=[redacted] " in text
