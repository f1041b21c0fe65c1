"""config/gunicorn.py as production runs it: `gunicorn -c config/gunicorn.py`."""

import gc
import http.client
import os
import runpy
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.servers import ROOT, free_port

pytestmark = pytest.mark.e2e

LISTEN = "0A"  # the TCP state in /proc/net/tcp


def listening_sockets(port: int) -> int:
    found = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            if state == LISTEN and int(local.rsplit(":", 1)[1], 16) == port:
                found += 1
    return found


def listening_unix_sockets(path: Path) -> int:
    """Sockets listening at `path`, whether or not the path was unlinked since."""
    lines = Path("/proc/net/unix").read_text().splitlines()[1:]
    # Fields: Num RefCount Protocol Flags Type St Inode Path; Flags 00010000 is listening.
    return sum(1 for line in lines if line.split()[3] == "00010000" and line.endswith(str(path)))


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: Path):
        super().__init__("localhost", timeout=5)
        self.path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(5)
        self.sock.connect(str(self.path))


def answers(connect: Callable[[], http.client.HTTPConnection]) -> int | None:
    try:
        connection = connect()
        connection.request("GET", "/v1/subscriptions/x")
        return connection.getresponse().status
    except OSError:
        return None


def on_port(port: int) -> Callable[[], http.client.HTTPConnection]:
    return lambda: http.client.HTTPConnection("127.0.0.1", port, timeout=5)


@contextmanager
def gunicorn(bind: str, reuse_port: str, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """Three workers serving the benchmark's floor, which needs no database to refuse a
    request without a token."""
    env = {
        **os.environ,
        "WEB_CONCURRENCY": "3",
        "GUNICORN_REUSE_PORT": reuse_port,
        "SECRET_KEY": "gunicorn-test-secret-key-long-enough-for-hs256-signing",
        "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none",
    }
    with log.open("wb") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.py", "--bind", bind,
             "bench.floor:application"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        yield server
    finally:
        server.terminate()
        server.wait(timeout=30)


def wait_until(ready: Callable[[], bool], server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 30
    while not ready():
        assert server.poll() is None, log.read_text()
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.1)
    time.sleep(0.5)  # any worker's socket would have been bound by now


@pytest.mark.parametrize(("reuse_port", "sockets"), [("true", 3), ("false", 1)])
def test_each_worker_listens_on_a_socket_of_its_own(reuse_port, sockets, tmp_path):
    """So the kernel spreads connections over the workers (GUNICORN_REUSE_PORT)."""
    port, log = free_port(), tmp_path / "gunicorn.log"
    with gunicorn(f"127.0.0.1:{port}", reuse_port, log) as server:
        wait_until(
            lambda: listening_sockets(port) >= sockets and answers(on_port(port)) is not None,
            server,
            log,
        )

        assert answers(on_port(port)) == 401
        assert listening_sockets(port) == sockets


def test_a_port_in_use_stops_the_server_at_once_with_the_reason(tmp_path):
    """Not workers failing to bind and being started again forever, nor a port shared with
    a server left running."""
    log = tmp_path / "gunicorn.log"
    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with gunicorn(f"127.0.0.1:{port}", "true", log) as server:
            assert server.wait(timeout=30) == 1

            assert f"Cannot listen on 127.0.0.1:{port}: Address already in use" in log.read_text()
            assert "Booting worker" not in log.read_text()


def test_workers_share_one_unix_socket(tmp_path):
    """Each worker binding the path anew would leave only the last one's socket reachable."""
    path, log = tmp_path / "gunicorn.sock", tmp_path / "gunicorn.log"
    with gunicorn(f"unix:{path}", "true", log) as server:
        wait_until(lambda: answers(lambda: UnixConnection(path)) is not None, server, log)

        assert answers(lambda: UnixConnection(path)) == 401
        assert listening_unix_sockets(path) == 1


def test_what_the_master_loaded_is_frozen_before_each_fork():
    hooks = runpy.run_path(str(ROOT / "config" / "gunicorn.py"))
    gc.unfreeze()
    try:
        hooks["pre_fork"](server=None, worker=None)

        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_by_default_only_this_machine_reaches_the_service(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loopback: the proxy in front is the only client (docs/operations.md, "Behind a proxy");
    and gunicorn believes the scheme headers of the peers the service trusts, no others."""
    monkeypatch.delenv("GUNICORN_BIND", raising=False)
    monkeypatch.delenv("TRUSTED_PROXIES", raising=False)
    config = runpy.run_path(str(ROOT / "config" / "gunicorn.py"))
    assert config["bind"] == "127.0.0.1:8000"
    assert config["forwarded_allow_ips"] == "127.0.0.1,::1"

    monkeypatch.setenv("GUNICORN_BIND", "0.0.0.0:8000")
    monkeypatch.setenv("TRUSTED_PROXIES", "10.0.0.0/8")
    config = runpy.run_path(str(ROOT / "config" / "gunicorn.py"))
    assert config["bind"] == "0.0.0.0:8000"
    assert config["forwarded_allow_ips"] == "10.0.0.0/8"


@pytest.mark.parametrize("value", ["0", "-1", "abc", "nan", "inf"])
def test_a_client_timeout_that_is_no_bound_stops_the_server_with_the_reason(value):
    """0 would turn the sockets' bounds off, and a word or an endless one would fail at the
    first connection instead of at start."""
    started = subprocess.run(
        [sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.py", "--check-config",
         "config.wsgi"],
        cwd=ROOT, env={**os.environ, "CLIENT_TIMEOUT": value}, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert started.returncode != 0
    assert (
        "CLIENT_TIMEOUT must be a number of seconds above 0 and below a day, "
        f"not '{value}'" in started.stdout + started.stderr
    )
