"""What every bench shares: its knobs, the table of figures, the service under gunicorn, wrk and
the CPU time it measures, the clients an app holds, and the service's database set up; used by
bench/run.py's areas and by `make soak`, `make soak-hosts` and `make scale`."""

import http.client
import json
import os
import re
import runpy
import signal
import subprocess
import sys
import time
from base64 import b64encode
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from tests import servers

ROOT = Path(__file__).resolve().parents[1]

SECONDS = int(os.environ.get("BENCH_SECONDS", "10"))
# The kernel hashes each connection to one gunicorn worker's socket (SO_REUSEPORT): 8 seldom
# split evenly over 4 workers, and the same code's p50 moved by a quarter from load to load.
CONNECTIONS = int(os.environ.get("BENCH_CONNECTIONS", "32"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "2"))
OUT = ROOT / "bench" / "out"
WORKERS = runpy.run_path(str(ROOT / "config" / "gunicorn.py"))["workers"]
ROWS: list[tuple[str, str, str]] = []  # the summary table: figure, measured, target


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def row(figure: str, measured: str, target: str = "") -> None:
    ROWS.append((figure, measured, target))
    print(f"  {figure}: {measured}" + (f"   (target {target})" if target else ""), flush=True)


# --- processes ---------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Tree:
    """A server under test: the process `root()` names (None while it is not running), its
    descendants, and the children they have waited for, counted as one `kind`."""

    kind: str
    root: Callable[[], int | None]


# What wrk's readings count: each server the bench started, registered by what starts it
# (Gunicorn.start, bench/run.py for its PostgreSQL and Redis).
UNDER_TEST: list[Tree] = []


@contextmanager
def under_test(*trees: Tree) -> Iterator[None]:
    """`trees` counted by every reading of server_cpu that names none, while the block runs."""
    UNDER_TEST.extend(trees)
    try:
        yield
    finally:
        for tree in trees:
            UNDER_TEST.remove(tree)


class Gunicorn:
    """A gunicorn master serving `app` with config/gunicorn.py on a loopback port."""

    def __init__(self, app: str, env: dict[str, str], log: Path):
        # No access log, as behind a proxy that keeps one: the figures are the service's own.
        self.app, self.env, self.log = app, {"ACCESS_LOG": "false", **env}, log
        self.port = servers.free_port()
        self.process: subprocess.Popen[bytes] | None = None
        kind = "floor" if app.startswith("bench.floor") else "service"
        self.tree = Tree(kind, lambda: self.process.pid if self.process else None)

    def start(self) -> "Gunicorn":
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.py",
                 "--bind", f"127.0.0.1:{self.port}", self.app],
                cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        if self.tree not in UNDER_TEST:  # started again after a kill (make soak-hosts)
            UNDER_TEST.append(self.tree)
        deadline = time.monotonic() + 60
        while len(self.workers()) < WORKERS or not self._answers():
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError(f"gunicorn did not start:\n{self.log.read_text()[-2000:]}")
            time.sleep(0.1)
        return self

    def _answers(self) -> bool:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
            conn.request("GET", "/v1/subscriptions/x")
            return conn.getresponse().status < 500
        except OSError:
            return False

    def workers(self) -> list[int]:
        assert self.process is not None
        path = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        return [int(pid) for pid in path.read_text().split()] if path.exists() else []

    def rss_mb(self) -> float:
        """The largest resident set of the web workers, in MB."""
        sizes = []
        for pid in self.workers():
            status = Path(f"/proc/{pid}/status").read_text()
            sizes.append(int(re.search(r"VmRSS:\s+(\d+) kB", status)[1]) / 1024)  # type: ignore[index]
        return max(sizes)

    def stop(self) -> None:
        if self.tree in UNDER_TEST:
            UNDER_TEST.remove(self.tree)
        if self.process is not None:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=60)
            self.process = None


@contextmanager
def running(*things: Any) -> Iterator[None]:
    try:
        yield
    finally:
        for thing in things:
            thing.stop()


@dataclass(frozen=True)
class Load:
    requests: int
    rps: float
    p50_ms: float
    p99_ms: float
    errors: int
    cpu_us: dict[str, float]  # CPU time per request, by kind of process (see server_cpu)


def postgres_tree(pg: servers.Server) -> Tree:
    """The PostgreSQL the bench started, found by its data folder: pg_ctl detaches the
    postmaster, and a restart (make soak's) gives it a new pid."""

    def postmaster() -> int | None:
        try:
            return int((pg.process_dir / "data" / "postmaster.pid").read_text().split()[0])
        except (OSError, IndexError, ValueError):
            return None

    return Tree("PostgreSQL", postmaster)


def redis_tree(redis_server: servers.RedisServer) -> Tree:
    return Tree("Redis", lambda: redis_server.process.pid if redis_server.process else None)


def popen_tree(kind: str, process: subprocess.Popen[bytes]) -> Tree:
    return Tree(kind, lambda: process.pid if process.poll() is None else None)


def server_cpu(trees: list[Tree] | None = None) -> dict[int, tuple[str, float]]:
    """CPU seconds used so far by each of `trees` (UNDER_TEST unless given), keyed by its
    root's pid, with its kind. Only those trees: other people's gunicorn, PostgreSQL and Redis
    on the same machine are not the servers under test.

    A tree's time is its processes' own and that of the children they waited for, so a
    PostgreSQL backend or a gunicorn worker that ended between two readings still counts. CPU
    time per request shows where a request's cost lies (the service, the database, Redis),
    which requests per second cannot; both still move with what else the host runs.
    """
    found = {}
    for tree in UNDER_TEST if trees is None else trees:
        pid = tree.root()
        if pid is None:
            continue
        try:
            root = psutil.Process(pid)
            members = [root, *root.children(recursive=True)]
        except psutil.Error:
            continue
        seconds = 0.0
        for member in members:
            # One that ended since the listing is counted by its parent's next reading.
            with suppress(psutil.Error):
                times = member.cpu_times()
                seconds += times.user + times.system + times.children_user + times.children_system
        found[pid] = (tree.kind, seconds)
    return found


def cpu_used(
    before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]]
) -> dict[str, float]:
    """CPU seconds each kind of process used between two readings of server_cpu (a tree
    started in between counts from nothing)."""
    used: dict[str, float] = {}
    for pid, (kind, seconds) in after.items():
        used[kind] = used.get(kind, 0.0) + seconds - before.get(pid, (kind, 0.0))[1]
    return used


def wrk(
    port: int,
    path: str,
    token: str,
    seconds: int = SECONDS,
    connections: int = CONNECTIONS,
    headers: tuple[str, ...] = (),
) -> Load:
    """`wrk` at `connections` for `seconds`, with its latency percentiles; each request carries
    the bearer `token`, or `headers` instead when given."""
    before = server_cpu()
    sent = [part for h in headers or (f"Authorization: Bearer {token}",) for part in ("-H", h)]
    out = subprocess.run(
        ["wrk", "-t", str(min(2, connections)), "-c", str(connections), "-d", f"{seconds}s",
         "--latency", *sent, f"http://127.0.0.1:{port}{path}"],
        capture_output=True, text=True, check=True, timeout=seconds + 60,
    ).stdout  # fmt: skip

    def latency(q: str) -> float:
        value, unit = re.search(rf"^\s+{q}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M).groups()  # type: ignore[union-attr]
        return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]

    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    socket_errors = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out
    )
    requests = int(re.search(r"(\d+) requests in", out)[1])  # type: ignore[index]
    cpu = cpu_used(before, server_cpu())
    return Load(
        requests=requests,
        cpu_us={kind: used / requests * 1e6 for kind, used in cpu.items() if used > 0},
        rps=float(re.search(r"Requests/sec:\s+([\d.]+)", out)[1]),  # type: ignore[index]
        p50_ms=latency("50"),
        p99_ms=latency("99"),
        errors=(int(errors[1]) if errors else 0)
        + (sum(map(int, socket_errors.groups())) if socket_errors else 0),
    )


def cpu_per_request(load: Load, kinds: tuple[str, ...]) -> float:
    return sum(load.cpu_us.get(kind, 0.0) for kind in kinds)


def described_cpu(load: Load, kinds: tuple[str, ...]) -> str:
    parts = " + ".join(f"{kind} {load.cpu_us.get(kind, 0.0):,.0f}" for kind in kinds)
    return f"{parts} = {cpu_per_request(load, kinds):,.0f} us"


def described(load: Load) -> str:
    errors = f", {load.errors} errors" if load.errors else ""
    return f"{load.rps:.0f} req/s, p50 {load.p50_ms:.2f} ms, p99 {load.p99_ms:.2f} ms{errors}"


class Client:
    """One kept-alive HTTP connection to the service, as an app would hold."""

    def __init__(self, port: int, token: str):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any, float]:
        data = None if body is None else json.dumps(body)
        start = time.perf_counter()
        self.conn.request(method, path, body=data, headers=self.headers)
        response = self.conn.getresponse()
        payload = response.read()
        elapsed = time.perf_counter() - start
        return response.status, json.loads(payload) if payload else None, elapsed


class GpodderSession:
    """One app's kept-alive connection to the gpodder API: Basic on its first request (or on a
    request with `auth`), then the session cookie the answer set."""

    def __init__(self, port: int, username: str, password: str):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.basic = "Basic " + b64encode(f"{username}:{password}".encode()).decode()
        self.cookie = ""

    def call(
        self, method: str, path: str, body: Any = None, auth: bool = False
    ) -> tuple[Any, float]:
        headers = {"Content-Type": "application/json"}
        sent = {"Authorization": self.basic} if auth or not self.cookie else {"Cookie": self.cookie}
        headers.update(sent)
        data = None if body is None else json.dumps(body)
        start = time.perf_counter()
        self.conn.request(method, path, body=data, headers=headers)
        response = self.conn.getresponse()
        payload = response.read()
        elapsed = time.perf_counter() - start
        if response.status != 200:
            raise RuntimeError(f"{method} {path} answered {response.status}: {payload[:300]!r}")
        for set_cookie in response.headers.get_all("Set-Cookie") or []:
            if set_cookie.startswith("sessionid="):
                self.cookie = set_cookie.split(";")[0]
        return json.loads(payload) if payload else None, elapsed


def django_on(
    pg: servers.Server, redis_server: servers.RedisServer, database: str, **settings: str
) -> dict[str, str]:
    """Create `database`, set this process up on it with the production settings (and
    `settings`), migrate it; return the environment the service's processes run with."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.base",  # production, as deployed
        "SECRET_KEY": "benchmark-only-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz",
        "DATABASE_URL": f"postgres://postgres@{pg.host}:{pg.port}/{database}",
        "REDIS_URL": redis_server.url,
        "ALLOWED_HOSTS": "127.0.0.1,testserver",
        "SECURE_SSL_REDIRECT": "false",
        "THROTTLE_USER_RATE": "100000000/min",  # the throttle runs, but never says no
        "LOG_LEVEL": "WARNING",
        **settings,
    }
    os.environ.update(env)
    import django
    import psycopg

    with psycopg.connect(f"postgresql://postgres@{pg.host}:{pg.port}/postgres") as conn:
        conn.autocommit = True
        conn.execute(f"CREATE DATABASE {database}")
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("collectstatic", "--noinput", verbosity=0)  # the pages' and admin's, as deployed
    return env


def add_users(env: dict[str, str], users: tuple[str, ...], password: str) -> None:
    """Accounts for `users`, each with `password`, in the database the service's environment
    `env` names (through manage.py: this process's Django stays on the bench's own database)."""
    made = (
        "from django.contrib.auth import get_user_model\n"
        f"for name in {users!r}:\n"
        f"    get_user_model().objects.create_user(name, password={password!r})\n"
    )
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", made],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if done.returncode:
        raise RuntimeError(f"manage.py shell failed:\n{done.stderr[-2000:]}")


def token_for(user: Any) -> str:
    from accounts.services import refresh_token_for

    return str(refresh_token_for(user).access_token)


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.001)


def signed_in_cookie(user: Any) -> str:
    """A Cookie header of a session signed in on the pages (accounts.sessions), as bench_web's."""
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    from accounts.sessions import BROWSER, SURFACE_SESSION_KEY

    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session[SURFACE_SESSION_KEY] = BROWSER
    session.create()
    return f"Cookie: {settings.SESSION_COOKIE_NAME}={session.session_key}"


def page_get(port: int, path: str, cookie: str) -> tuple[int, bytes, float]:
    """A GET on a new connection with the session `cookie`: status, body, seconds to its end."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    start = time.perf_counter()
    connection.request("GET", path, headers=dict([cookie.split(": ", 1)]))
    response = connection.getresponse()
    body = response.read()
    elapsed = time.perf_counter() - start
    connection.close()
    return response.status, body, elapsed


def timed_pages(port: int, path: str, cookie: str, seconds: float, least: int = 5) -> list[float]:
    """GETs of `path` one after another on one kept-alive connection with the session `cookie`,
    for `seconds` and `least` of them at least: each one's time in ms. (Like wrk at one
    connection, without wrk's 2 s timeout, which counts a slower page as an error.)"""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    headers = dict([cookie.split(": ", 1)])
    took: list[float] = []
    deadline = time.monotonic() + seconds
    while len(took) < least or time.monotonic() < deadline:
        start = time.perf_counter()
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        response.read()
        took.append((time.perf_counter() - start) * 1000)
        if response.status != 200:
            raise RuntimeError(f"GET {path} answered {response.status}")
    connection.close()
    return took
