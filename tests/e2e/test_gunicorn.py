"""config/gunicorn.py as production runs it: `gunicorn -c config/gunicorn.py`."""

import http.client
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.servers import ROOT, free_port

LISTEN = "0A"  # the TCP state in /proc/net/tcp


def listening_sockets(port: int) -> int:
    found = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            if state == LISTEN and int(local.rsplit(":", 1)[1], 16) == port:
                found += 1
    return found


def answers(port: int) -> int | None:
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        connection.request("GET", "/v1/subscriptions/x")
        return connection.getresponse().status
    except OSError:
        return None


@pytest.mark.parametrize(("reuse_port", "sockets"), [("true", 3), ("false", 1)])
def test_each_worker_listens_on_a_socket_of_its_own(reuse_port, sockets, tmp_path):
    """So the kernel spreads connections over the workers (GUNICORN_REUSE_PORT); the app is the
    benchmark's floor, which needs no database to refuse a request without a token."""
    port = free_port()
    env = {
        **os.environ,
        "WEB_CONCURRENCY": "3",
        "GUNICORN_REUSE_PORT": reuse_port,
        "SECRET_KEY": "gunicorn-test-secret-key-long-enough-for-hs256-signing",
        "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none",
    }
    with (tmp_path / "gunicorn.log").open("wb") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.py",
             "--bind", f"127.0.0.1:{port}", "bench.floor:application"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while listening_sockets(port) < sockets or answers(port) is None:
            assert server.poll() is None, (tmp_path / "gunicorn.log").read_text()
            assert time.monotonic() < deadline, (tmp_path / "gunicorn.log").read_text()
            time.sleep(0.1)
        time.sleep(0.5)  # any worker's socket would have been bound by now

        assert answers(port) == 401
        assert listening_sockets(port) == sockets
    finally:
        server.terminate()
        server.wait(timeout=30)
