"""Real PostgreSQL and Redis servers for the test session, started from the installed binaries.

PostgreSQL refuses to run as root, so under root the server runs as the `postgres` user.
"""

import http.client
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _pg_bin(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    for candidate in sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"), reverse=True):
        return str(candidate)
    raise RuntimeError(f"{name} not found: install PostgreSQL's server binaries (make test does)")


@dataclass(frozen=True)
class Server:
    host: str
    port: int
    process_dir: Path
    durable: bool = False  # PostgreSQL's own fsync, synchronous_commit and full_page_writes


def _as_postgres() -> list[str]:
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


def postgres_start(server: Server) -> None:
    """Start (or start again) the server's PostgreSQL, on its port and data folder."""
    options = f"-p {server.port} -k {server.process_dir} -c listen_addresses=127.0.0.1 "
    if not server.durable:
        options += "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
    options += "-c max_connections=200"
    subprocess.run(
        [*_as_postgres(), _pg_bin("pg_ctl"), "-D", str(server.process_dir / "data"), "-o", options,
         "-l", str(server.process_dir / "log"), "-w", "-t", "60", "start"],
        check=True,
        capture_output=True,
        timeout=120,
    )  # fmt: skip


def postgres_stop(server: Server) -> None:
    """Stop it as an operator would for a restart: fast (sessions are ended, then it stops)."""
    subprocess.run(
        [*_as_postgres(), _pg_bin("pg_ctl"), "-D", str(server.process_dir / "data"),
         "-m", "fast", "-w", "stop"],
        check=True,
        capture_output=True,
        timeout=120,
    )  # fmt: skip


@contextmanager
def postgres(durable: bool = False, folder: Path | None = None) -> Iterator[Server]:
    """A new PostgreSQL, fast and not crash-safe (fsync, synchronous_commit and
    full_page_writes off) unless `durable`: then with PostgreSQL's defaults for those three.
    With `folder`, its data is kept there, and a server already there is started again
    (`make scale`'s SCALE_KEEP); else it lives in a temporary folder, removed at the end."""
    base = folder or Path(tempfile.mkdtemp(prefix="opa-pg-"))
    base.mkdir(parents=True, exist_ok=True)
    as_user: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(base, "postgres", "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    data, port = base / "data", free_port()
    if not (data / "PG_VERSION").exists():
        subprocess.run(
            [*as_user, _pg_bin("initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
             "-E", "UTF8", "--no-sync"],
            check=True,
            capture_output=True,
            timeout=120,
        )  # fmt: skip
    server = Server("127.0.0.1", port, base, durable)
    postgres_start(server)
    try:
        yield server
    finally:
        subprocess.run(
            [*as_user, _pg_bin("pg_ctl"), "-D", str(data), "-m", "fast" if folder else "immediate",
             "stop"],
            capture_output=True,
            timeout=120,
        )  # fmt: skip
        if folder is None:
            shutil.rmtree(base, ignore_errors=True)


def _wait_for_port(host: str, port: int, process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not start") from None
            time.sleep(0.05)


@contextmanager
def pgbouncer(pg: Server, *, pool_size: int = 20) -> Iterator[Server]:
    """PgBouncer (Debian's) in transaction pooling mode in front of `pg`: every database name
    passed through to it, and one of `pool_size` server connections per database given to a
    client for one transaction at a time, as a large deployment runs it (docs/operations.md,
    "PgBouncer")."""
    binary = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
    if not Path(binary).exists():
        raise RuntimeError("pgbouncer not found: install Debian's pgbouncer (make test does)")
    base = Path(tempfile.mkdtemp(prefix="opa-pgbouncer-"))
    port = free_port()
    (base / "users.txt").write_text('"postgres" ""\n')
    (base / "pgbouncer.ini").write_text(
        "[databases]\n"
        f"* = host={pg.host} port={pg.port}\n"
        "[pgbouncer]\n"
        f"listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n"
        f"auth_type = trust\nauth_file = {base / 'users.txt'}\n"
        "pool_mode = transaction\n"
        # Fewer server connections than the suite's clients: they must really be shared.
        f"max_client_conn = 1000\ndefault_pool_size = {pool_size}\n"
        "ignore_startup_parameters = extra_float_digits,options\n"
        f"logfile = {base / 'log'}\n"
    )
    if os.geteuid() == 0:  # PgBouncer refuses to run as root, as PostgreSQL does
        shutil.chown(base, "postgres", "postgres")
        for name in ("users.txt", "pgbouncer.ini"):
            shutil.chown(base / name, "postgres", "postgres")
    process = subprocess.Popen(
        [*_as_postgres(), binary, str(base / "pgbouncer.ini")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_port("127.0.0.1", port, process, "pgbouncer")
        yield Server("127.0.0.1", port, base)
    finally:
        stop(process)
        shutil.rmtree(base, ignore_errors=True)


def stop(process: subprocess.Popen[bytes], timeout: float = 10) -> None:
    """End a server process: asked to stop, then killed when it has not within `timeout`."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class RedisServer:
    """A redis-server on a fixed free port that a test can stop and start again."""

    def __init__(self) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="opa-redis-"))
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        self.process = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.base)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.process.kill()
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)
            self.process = None


@contextmanager
def redis() -> Iterator[RedisServer]:
    server = RedisServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.base, ignore_errors=True)


class Worker:
    """A `celery -A config worker -B` process group; kill() is SIGKILL to all of it."""

    def __init__(self, env: dict[str, str], log: Path):
        self.env, self.log = env, log
        self.process: subprocess.Popen[bytes] | None = None

    def start(
        self, concurrency: int = 2, *, beat: bool = True, name: str = "", queues: str = ""
    ) -> "Worker":
        schedule = self.log.with_suffix(".schedule")
        options = ["-B", "--schedule", str(schedule)] if beat else []
        if name:
            options += ["--hostname", f"{name}@%h"]
        if queues:
            options += ["--queues", queues]
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "config", "worker", *options,
                 "--concurrency", str(concurrency), "--loglevel", "INFO", "--without-gossip",
                 "--without-mingle", "--without-heartbeat"],
                cwd=ROOT,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        return self

    def kill(self) -> None:
        if self.process is not None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
            self.process = None

    def stop(self) -> None:
        if self.process is not None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
            self.process = None

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def status(port: int, path: str) -> int:
    """The status a GET of `path` on a loopback port answers; 0 when nothing answers."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", path)
        return conn.getresponse().status
    except OSError:
        return 0
    finally:
        conn.close()


def production_env(name: str, db: dict[str, Any], **settings: str) -> dict[str, str]:
    """The environment of the service under the production settings on the tests' database
    `db` (Django's settings_dict), over plain HTTP from 127.0.0.1, with `settings` on top."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.base",
        "SECRET_KEY": f"{name}-test-secret-key-long-enough-for-hs256-signing",
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "false",
        **settings,
    }


@contextmanager
def gunicorn_service(
    env: dict[str, str], log: Path, wrapper: tuple[str, ...] = (), port: int = 0
) -> Iterator[int]:
    """The service (config.wsgi) under gunicorn with config/gunicorn.py, as production runs it,
    on loopback `port` (a free one unless told) and the settings `env` gives: its port, once
    GET /v1/ answers. `wrapper` runs it (`prlimit --fsize=...`, for a disk that fills)."""
    port = port or free_port()
    with log.open("wb") as out:
        server = subprocess.Popen(
            [*wrapper, sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.py",
             "--bind", f"127.0.0.1:{port}", "config.wsgi"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while status(port, "/v1/") != 200:
            assert server.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        yield port
    finally:
        server.terminate()
        server.wait(timeout=30)


@contextmanager
def runserver(env: dict[str, str]) -> Iterator[int]:
    """This service under Django's runserver with the settings `env` gives, on a free loopback
    port: its port, once /health answers."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while status(port, "/health") != 200:
            assert server.poll() is None, "runserver stopped"
            assert time.monotonic() < deadline, "runserver did not answer"
            time.sleep(0.2)
        yield port
    finally:
        server.terminate()
        server.wait(timeout=30)


def settings_started(
    folder: Path, names: list[str], **settings: str
) -> subprocess.CompletedProcess[str]:
    """The production settings (config.settings.base) loaded by a process of their own with
    `settings` in its environment, on a SQLite database in `folder`: it prints the values of
    `names`, separated by "|", on its last line, or fails as a start would, saying why."""
    env = {
        "PATH": os.environ["PATH"],
        "DJANGO_SETTINGS_MODULE": "config.settings.base",
        "SECRET_KEY": "a-production-secret-key-that-is-long-and-random-enough-0123456789",
        "DATABASE_URL": f"sqlite:///{folder / 'db.sqlite3'}",
        **settings,
    }
    shown = ", ".join(f"s.{name}" for name in names)
    return subprocess.run(
        [sys.executable, "manage.py", "shell", "-c",
         f"from django.conf import settings as s; print({shown}, sep='|')"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
