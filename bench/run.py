"""Benchmarks, run by `make bench`: prints figures and their targets; asserts nothing.

Starts everything on loopback, the way production runs: PostgreSQL, Redis, the service under
gunicorn with `config/gunicorn.py` and the production settings module, the floor
(`bench/floor.py`) under the same gunicorn settings, and Celery workers. Load comes from wrk
at a fixed concurrency for a fixed time. Figures vary from machine to machine; the ratios are
what to compare. `BENCH_SECONDS` (default 10) and `BENCH_CONNECTIONS` (default 32) tune the
load; `BENCH_PROFILE=1` also records a py-spy profile of one web worker under the GET-one load.
"""

import contextlib
import http.client
import json
import os
import re
import runpy
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from base64 import b64encode
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import apps, feeds, home, pages  # noqa: E402
from tests import servers  # noqa: E402

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


class Gunicorn:
    """A gunicorn master serving `app` with config/gunicorn.py on a loopback port."""

    def __init__(self, app: str, env: dict[str, str], log: Path):
        # No access log, as behind a proxy that keeps one: the figures are the service's own.
        self.app, self.env, self.log = app, {"ACCESS_LOG": "false", **env}, log
        self.port = servers.free_port()
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> "Gunicorn":
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.py",
                 "--bind", f"127.0.0.1:{self.port}", self.app],
                cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
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


def server_cpu() -> dict[int, tuple[str, float]]:
    """CPU seconds used so far by each gunicorn, PostgreSQL and Redis process, with its kind.

    CPU time per request shows where a request's cost lies (the service, the database, Redis),
    which requests per second cannot; both still move with what else the host runs.
    """
    tick = os.sysconf("SC_CLK_TCK")
    found = {}
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError):
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        if "gunicorn" in command:
            kind = "floor" if "bench.floor" in command else "service"
        elif name.startswith("postgres"):
            kind = "PostgreSQL"
        elif name.startswith("redis"):
            kind = "Redis"
        else:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        found[int(entry.name)] = (kind, (int(fields[11]) + int(fields[12])) / tick)
    return found


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
    cpu: dict[str, float] = {}
    for pid, (kind, seconds_used) in server_cpu().items():
        cpu[kind] = cpu.get(kind, 0.0) + seconds_used - before.get(pid, (kind, 0.0))[1]
    return Load(
        requests=requests,
        cpu_us={kind: used / requests * 1e6 for kind, used in cpu.items() if used > 0},
        rps=float(re.search(r"Requests/sec:\s+([\d.]+)", out)[1]),  # type: ignore[index]
        p50_ms=latency("50"),
        p99_ms=latency("99"),
        errors=(int(errors[1]) if errors else 0)
        + (sum(map(int, socket_errors.groups())) if socket_errors else 0),
    )


@dataclass(frozen=True)
class Round:
    """One load each of the floor, GET one and the list, run one after the other."""

    floor: Load
    get_one: Load
    listed: Load
    get_alone: Load  # at one connection
    listed_alone: Load


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


# --- the run -----------------------------------------------------------------------------------


def main() -> None:
    if not shutil.which("wrk"):
        sys.exit("wrk is not installed: `make bench` installs it (Debian: apt-get install wrk)")
    OUT.mkdir(exist_ok=True)
    logs = Path(tempfile.mkdtemp(prefix="opa-bench-"))
    with servers.postgres() as pg, servers.redis() as redis_server:
        env = django_on(pg, redis_server, "opa_bench")
        print(
            f"opa-subscriptions benchmarks: gunicorn {WORKERS} workers "
            f"(config/gunicorn.py), wrk {CONNECTIONS} connections x {SECONDS} s, "
            f"{os.cpu_count()} cores\n",
            flush=True,
        )
        # BENCH_ONLY=queries: only the in-process counts, a quick check of a change to them;
        # BENCH_ONLY=web: only the account holders' pages; BENCH_ONLY=nextcloud: only the
        # Nextcloud paths' round beside the gpodder one; BENCH_ONLY=sync: only the sync
        # requests beside GET one; BENCH_ONLY=apps: only bench/apps.py's load, on PostgreSQL
        # with fsync off and with its defaults; BENCH_ONLY=catalogue: only the episode
        # catalogue's pages, export and feed-check store (bench_catalogue); BENCH_ONLY=feeds:
        # only what reading each hostile feed shape costs a check (bench/feeds.py);
        # BENCH_ONLY=home: only the home server's start, sync load and memory (bench/home.py);
        # BENCH_ONLY=pages: only every page at two sizes of an account (bench/pages.py).
        only = os.environ.get("BENCH_ONLY")
        served_alone = {
            "web": bench_web,
            "nextcloud": bench_nextcloud,
            "sync": bench_sync,
            "catalogue": bench_catalogue,
            "pages": bench_pages,
        }
        if only in served_alone:
            app = Gunicorn("config.wsgi", env, logs / "app.log")
            with running(app):
                app.start()
                served_alone[only](app)
        elif only not in ("queries", "apps", "feeds", "home", "pages"):
            app = Gunicorn("config.wsgi", env, logs / "app.log")
            floor = Gunicorn("bench.floor:application", env, logs / "floor.log")
            with running(app, floor):
                app.start()
                floor.start()
                bench_http(app, floor, env, logs)
        if only not in (
            "queries",
            "web",
            "nextcloud",
            "sync",
            "catalogue",
            "feeds",
            "home",
            "pages",
        ):
            bench_apps(pg, redis_server, logs)
        if only not in ("web", "sync", "apps", "catalogue", "feeds", "home", "pages"):
            bench_nextcloud_queries()
        if only not in ("web", "nextcloud", "sync", "apps", "catalogue", "feeds", "home", "pages"):
            bench_queries()
            bench_calls()
        if only in (None, "feeds"):
            feeds.bench_feed_parsing(row, catalogue_rss)
        if only in (None, "home"):
            home.bench_home(row)
    print("\n| figure | measured | target |\n|---|---|---|")
    for figure, measured, target in ROWS:
        print(f"| {figure} | {measured} | {target} |")
    print(f"\nLogs: {logs}")


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


def token_for(user: Any) -> str:
    from accounts.services import refresh_token_for

    return str(refresh_token_for(user).access_token)


def answer(port: int, path: str, token: str) -> tuple[int, Any]:
    """A GET's status and JSON body."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("GET", path, headers={"Authorization": f"Bearer {token}"})
    response = connection.getresponse()
    return response.status, json.loads(response.read())


def bench_http(app: Gunicorn, floor: Gunicorn, env: dict[str, str], logs: Path) -> None:
    from subscriptions import services
    from tests.factories import UserFactory

    rss_start = app.rss_mb()
    served = 0

    # GET one, checked against the floor first.
    reader: Any = UserFactory()
    token = token_for(reader)
    [sub] = services.subscription_add_many(
        user=reader, entries=[services.AddEntry("https://bench.example.com/one.xml")]
    ).success
    path = f"/v1/subscriptions/{sub.guid}"
    [moved] = services.subscription_add_many(
        user=reader, entries=[services.AddEntry("https://bench.example.com/moved.xml")]
    ).success
    services.subscription_update(
        user=reader, guid=moved.guid, change=services.SubscriptionUpdate(new_guid=uuid.uuid4())
    )
    for checked in (path, f"/v1/subscriptions/{moved.guid}", f"/v1/subscriptions/{uuid.uuid4()}"):
        if answer(floor.port, checked, token) != answer(app.port, checked, token):
            raise RuntimeError(f"The floor does not answer GET {checked} as the service does")

    # The list: a page of 50 out of 10,000, with `since`.
    lister: Any = UserFactory()
    for batch in range(20):
        entries = [services.AddEntry(f"https://list.example.com/{batch}/{i}") for i in range(500)]
        services.subscription_add_many(user=lister, entries=entries)
    time.sleep(0.01)
    from api.fields import format_timestamp
    from core.clock import now

    since = format_timestamp(now())
    time.sleep(0.01)
    from subscriptions.models import Subscription

    for guid in Subscription.objects.filter(user=lister).values_list("guid", flat=True)[::200]:
        services.subscription_update(
            user=lister, guid=guid, change=services.SubscriptionUpdate(is_subscribed=False)
        )
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")  # as autovacuum would have, by the time it matters
    list_token = token_for(lister)
    list_path = f"/v1/subscriptions?since={since.replace('+', '%2B')}&per_page=50"
    status, body, _ = Client(app.port, list_token).call("GET", list_path)
    if status != 200 or len(body["subscriptions"]) != 50:
        raise RuntimeError(f"the list answered {status}: {body}")

    # The floor, GET one and the list, one after the other, ROUNDS times: the host's load
    # changes from minute to minute, and a ratio of two loads run far apart shows that most.
    wrk(floor.port, path, token, seconds=2)  # warm up: connections, caches
    served += wrk(app.port, path, token, seconds=2).requests
    served += wrk(app.port, list_path, list_token, seconds=2).requests
    rounds = []
    for _ in range(ROUNDS):
        floor_load, get_one = wrk(floor.port, path, token), wrk(app.port, path, token)
        listed = wrk(app.port, list_path, list_token)
        # One connection: each request's own time, with no queue before it.
        get_alone = wrk(app.port, path, token, seconds=SECONDS // 2, connections=1)
        listed_alone = wrk(app.port, list_path, list_token, seconds=SECONDS // 2, connections=1)
        served += sum(load.requests for load in (get_one, listed, get_alone, listed_alone))
        rounds.append(Round(floor_load, get_one, listed, get_alone, listed_alone))

    def each(figure: Callable[[Round], str]) -> str:
        return " / ".join(figure(loads) for loads in rounds)

    def ratios(ratio: Callable[[Round], float]) -> str:
        return " / ".join(f"{ratio(loads):.2f}" for loads in rounds)

    service, floor_kinds = ("service", "PostgreSQL", "Redis"), ("floor", "PostgreSQL")
    print(f"GET one and the list ({ROUNDS} rounds: each figure once a round)")
    row("floor: GET one", each(lambda r: described(r.floor)))
    row("GET /v1/subscriptions/{guid}", each(lambda r: described(r.get_one)))
    row("GET one: req/s vs the floor", ratios(lambda r: r.get_one.rps / r.floor.rps), ">= 0.5")
    row("floor: CPU per request", each(lambda r: described_cpu(r.floor, floor_kinds)))
    row("GET one: CPU per request", each(lambda r: described_cpu(r.get_one, service)))
    row(
        "GET one: floor's CPU per request vs the service's",
        ratios(
            lambda r: cpu_per_request(r.floor, floor_kinds) / cpu_per_request(r.get_one, service)
        ),
        ">= 0.5 (the same, by CPU time)",
    )
    row("list: page of 50 of 10,000 with since", each(lambda r: described(r.listed)))
    row("list vs GET one: p50 ratio", ratios(lambda r: r.listed.p50_ms / r.get_one.p50_ms), "<= 2")
    row(
        "GET one and the list at one connection",
        each(lambda r: f"p50 {r.get_alone.p50_ms:.2f} and {r.listed_alone.p50_ms:.2f} ms"),
    )
    row(
        "list vs GET one at one connection: p50 ratio",
        ratios(lambda r: r.listed_alone.p50_ms / r.get_alone.p50_ms),
        "<= 2",
    )
    row("list: CPU per request", each(lambda r: described_cpu(r.listed, service)))
    row(
        "list vs GET one: CPU per request",
        ratios(lambda r: cpu_per_request(r.listed, service) / cpu_per_request(r.get_one, service)),
        "<= 2 (the same, by CPU time)",
    )
    last = wrk(app.port, "/v1/subscriptions?per_page=50&page=200", list_token)
    served += last.requests
    row("list: last page of 200, no since", f"p50 {last.p50_ms:.2f} ms")
    rss_after_first, served_first = app.rss_mb(), served

    # Adds: one connection, one request at a time, as an app's first sync.
    writer: Any = UserFactory()
    client = Client(app.port, token_for(writer))
    counter = iter(range(10**9))

    def add(n: int) -> float:
        batch = next(counter)
        entries = [{"feed_url": f"https://add.example.com/{batch}/{i}.xml"} for i in range(n)]
        status, body, elapsed = client.call("POST", "/v1/subscriptions", {"subscriptions": entries})
        if status != 200 or len(body["success"]) != n:
            raise RuntimeError(f"an add answered {status}: {body}")
        return elapsed

    print("Add")
    one = [add(1) for _ in range(200)]
    many = [add(500) for _ in range(30)]
    served += 230
    row("POST 1 new entry", f"p50 {percentile(one, 0.5) * 1000:.2f} ms")
    row("POST 500 new entries", f"p50 {percentile(many, 0.5) * 1000:.2f} ms")
    ratio = percentile(many, 0.5) / percentile(one, 0.5)
    row("POST 500 vs POST 1: time ratio", f"{ratio:.1f}", "<= 10")

    rss_end, served_end = app.rss_mb(), served
    # The same mix once more: a process whose memory still grows now leaks; one at a high-water
    # mark (the allocator keeps what the largest bodies needed) stays where it is.
    served += wrk(app.port, path, token).requests + wrk(app.port, list_path, list_token).requests
    client.conn.close()  # idle past gunicorn's keep-alive: the next request connects anew
    for _ in range(30):
        add(500)
    served += 30
    rss_again = app.rss_mb()
    row(
        "web worker RSS (largest)",
        f"{rss_start:.0f} MB at start, {rss_after_first:.0f} MB after {served_first:,} "
        f"requests, {rss_end:.0f} MB after {served_end:,}, {rss_again:.0f} MB "
        f"after the same mix again ({served:,} in all)",
        "<= 120 MB, flat",
    )
    if os.environ.get("BENCH_PROFILE"):
        profile(app, path, token)
    bench_deletions(app, env, logs)
    bench_gpodder(app)
    bench_episodes(app)
    bench_nextcloud(app)
    bench_web(app)
    bench_pages(app)
    bench_catalogue(app)
    bench_sync(app)


def bench_gpodder(app: Gunicorn) -> None:
    """An app's first sync and its incremental pulls on the gpodder API, as AntennaPod and Kasts
    make them: Basic, then the session cookie (or Basic on every request)."""
    from tests.factories import UserFactory

    user: Any = UserFactory(with_password="bench-password")
    name = user.username
    session = GpodderSession(app.port, name, "bench-password")
    call = session.call

    print("gpodder API")
    call("POST", f"/api/2/auth/{name}/login.json", auth=True)
    uploads, pulls = [], []
    for first_sync in range(5):  # a new device of a new feed list each time
        urls = [f"https://gpodder.example.com/{first_sync}/{i}.xml" for i in range(1000)]
        path = f"/api/2/subscriptions/{name}/device{first_sync}.json"
        _, elapsed = call("POST", path, {"add": urls, "remove": []})
        uploads.append(elapsed)
        changes, elapsed = call("GET", f"{path}?since=0")
        pulls.append(elapsed)
    row("gpodder first sync: upload of 1,000 URLs", f"p50 {percentile(uploads, 0.5) * 1000:.1f} ms")
    row(
        "gpodder first sync: pull since=0",
        f"p50 {percentile(pulls, 0.5) * 1000:.1f} ms ({len(changes['add']):,} URLs)",
    )
    device = f"/api/2/subscriptions/{name}/device0.json"
    # An app's next round, a while later: its timestamp now lies after the first sync's changes.
    time.sleep(4)
    since = call("GET", f"{device}?since={changes['timestamp']}")[0]["timestamp"]
    incremental = [call("GET", f"{device}?since={since}")[1] for _ in range(200)]
    row("gpodder incremental pull, cookie", f"p50 {percentile(incremental, 0.5) * 1000:.2f} ms")
    session.conn.close()
    path = f"{device}?since={since}"

    def pulled(*headers: str) -> Load:
        load = wrk(app.port, path, "", seconds=SECONDS // 2, connections=1, headers=headers)
        if load.errors:
            raise RuntimeError(f"{load.errors} pulls failed with {headers}")
        return load

    by_cookie = pulled(f"Cookie: {session.cookie}")
    # Kasts: Basic on every request, with the cookie its Qt cookie jar keeps.
    by_basic = pulled(f"Authorization: {session.basic}", f"Cookie: {session.cookie}")
    # A client that keeps no cookie: every request logs in anew (a session written each time).
    cookieless = pulled(f"Authorization: {session.basic}")
    row(
        "gpodder incremental pull at one connection: cookie, Basic every time, Basic and no cookie",
        f"p50 {by_cookie.p50_ms:.2f}, {by_basic.p50_ms:.2f} and {cookieless.p50_ms:.2f} ms",
    )
    row(
        "gpodder pull, Basic every time vs cookie: p50 ratio",
        f"{by_basic.p50_ms / by_cookie.p50_ms:.2f}",
        "<= 1.5",
    )


def bench_web(app: Gunicorn) -> None:
    """The account holders' podcasts page at 5,000 subscriptions, half of them titled by a feed
    check: a page of 50 by title, a later page, a search, at one connection."""
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    from accounts.sessions import BROWSER, SURFACE_SESSION_KEY
    from feedchecks.models import FeedCheck
    from subscriptions import feeds
    from subscriptions.services import AddEntry, subscription_add_many
    from tests.factories import UserFactory

    user: Any = UserFactory()
    urls = [f"https://web.example.com/{n}.xml" for n in range(5000)]
    for start in range(0, len(urls), 500):
        subscription_add_many(
            user=user, entries=[AddEntry(feed_url=url) for url in urls[start : start + 500]]
        )
    FeedCheck.objects.bulk_create(
        FeedCheck(key_digest=feeds.feed_key_digest(url), url=url, title=f"Show {n}")
        for n, url in enumerate(urls)
        if n % 2 == 0
    )
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session[SURFACE_SESSION_KEY] = BROWSER  # signed in on the pages (accounts.sessions)
    session.create()
    cookie = f"Cookie: {settings.SESSION_COOKIE_NAME}={session.session_key}"
    connection = http.client.HTTPConnection("127.0.0.1", app.port, timeout=30)
    connection.request("GET", "/podcasts/", headers=dict([cookie.split(": ", 1)]))
    shown = connection.getresponse()
    if shown.status != 200 or b"5000 podcasts" not in shown.read():
        raise RuntimeError(f"the podcasts page answered {shown.status}, not the 5,000 podcasts")
    print("account holders' pages")
    for label, path in (
        ("first page", "/podcasts/"),
        ("page 50", "/podcasts/?page=50"),
        ("a search", "/podcasts/?q=show+12"),
    ):
        load = wrk(app.port, path, "", seconds=SECONDS // 3, connections=1, headers=(cookie,))
        if load.errors:
            raise RuntimeError(f"{load.errors} requests of {path} failed")
        row(
            f"podcasts page of 5,000 subscriptions, {label}, one connection",
            f"p50 {load.p50_ms:.1f} ms",
        )


# The episode catalogue: 100,000 actions over 200 podcasts whose feeds have catalogues.
CATALOGUE_PODCASTS = 200
CATALOGUE_EPISODES = 500  # in each feed's catalogue
CATALOGUE_ACTIONS = 100_000  # CATALOGUE_ACTIONS // CATALOGUE_PODCASTS: every episode once
# The export is read for this long at most (a slow one is reported as such, and cancelled).
EXPORT_SECONDS = float(os.environ.get("BENCH_EXPORT_SECONDS", "60"))


def bench_pages(app: Gunicorn) -> None:
    pages.bench_pages(
        app.port,
        row,
        insert_history=insert_history,
        cookie_for=signed_in_cookie,
        timed=timed_pages,
        percentile=percentile,
        seconds=max(3, SECONDS // 2),
    )


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


def export_read(port: int, cookie: str, limit: float) -> tuple[float, bytes, bool]:
    """GET /data/everything.json, read for `limit` seconds at most: seconds to its last byte
    read, the bytes, whether that was the whole. An export cut short is cancelled in the
    database too, so that it does not weigh on the figures after it."""
    from django.db import connection as db

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=limit + 5)
    start = time.perf_counter()
    connection.request("GET", "/data/everything.json", headers=dict([cookie.split(": ", 1)]))
    response = connection.getresponse()
    if response.status != 200:
        raise RuntimeError(f"the export answered {response.status}")
    chunks, whole = [], False
    try:
        while time.perf_counter() - start < limit:
            chunk = response.read1(1 << 16)
            if not chunk:
                whole = True
                break
            chunks.append(chunk)
    except TimeoutError:
        pass
    took = time.perf_counter() - start
    connection.close()
    if not whole:
        with db.cursor() as cursor:
            for _ in range(300):
                cursor.execute(
                    "SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity WHERE datname ="
                    " current_database() AND state = 'active' AND pid <> pg_backend_pid()"
                    " AND backend_type = 'client backend'"
                )
                if not cursor.fetchone()[0]:
                    break
                time.sleep(0.1)
    return took, b"".join(chunks), whole


def catalogue_items(podcast: int) -> list[Any]:
    """The catalogue of podcast `podcast` as a check of its feed reads it (parsing.FeedItem),
    the newest first: CATALOGUE_EPISODES items, each with a guid and an enclosure."""
    import hashlib
    from datetime import UTC, datetime, timedelta

    from feedchecks.parsing import FeedItem
    from subscriptions import feeds

    newest = datetime(2026, 11, 1, 6, tzinfo=UTC)
    items = []
    for episode in range(CATALOGUE_EPISODES - 1, -1, -1):
        guid, url = catalogue_episode(podcast, episode)
        items.append(
            FeedItem(
                item_key=hashlib.sha256(f"guid:{guid}".encode()).hexdigest(),
                guid=guid,
                title=f"Show {podcast}, episode {episode}: the catalogue's title",
                url=url,
                url_key=feeds.url_key_digest(url),
                link=f"https://catalogue.example.com/{podcast}/episodes/{episode}",
                published=newest - timedelta(days=CATALOGUE_EPISODES - 1 - episode),
                duration=3000 + episode,
                image_url="",
            )
        )
    return items


def catalogue_episode(podcast: int, episode: int) -> tuple[str, str]:
    """An episode's guid and enclosure URL, in its feed and in the actions on it."""
    return (
        f"catalogue-{podcast}-episode-{episode}",
        f"https://media.catalogue.example.com/{podcast}/{episode}.mp3",
    )


def catalogue_rss(count: int, changed: int = 0) -> bytes:
    """A podcast feed of `count` items, the newest first, as hosts write them: a title, a guid,
    an enclosure, a pubDate, itunes:duration, a link and a short description; the newest
    `changed` items' titles changed (a correction the host made)."""
    from datetime import UTC, datetime, timedelta
    from email.utils import format_datetime

    newest = datetime(2026, 11, 1, 6, tzinfo=UTC)
    items = []
    for n in range(count):
        episode = count - 1 - n
        title = f"Episode {episode}: a conversation about podcasts"
        if n < changed:
            title += " (corrected)"
        seconds = 1800 + episode % 3600
        items.append(
            f"<item><title>{title}</title>"
            f'<guid isPermaLink="false">bench-feed-episode-{episode}</guid>'
            f"<link>https://feed.example.com/episodes/{episode}</link>"
            f'<enclosure url="https://media.feed.example.com/audio/{episode}.mp3" '
            f'length="{30_000_000 + episode}" type="audio/mpeg"/>'
            f"<pubDate>{format_datetime(newest - timedelta(days=n), usegmt=True)}</pubDate>"
            f"<itunes:duration>{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
            "</itunes:duration>"
            f"<description><![CDATA[<p>In episode {episode} we talk about the week's news."
            "</p>]]></description></item>"
        )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd">'
        "<channel><title>The Bench Show</title><link>https://feed.example.com/</link>"
        '<itunes:image href="https://feed.example.com/cover.jpg"/>'
        + "".join(items)
        + "</channel></rss>"
    ).encode()


def bench_catalogue(app: Gunicorn) -> None:
    """The episode catalogue (docs/web.md, "Episodes by name"): the history page, a podcast's
    page and the export of an account with 100,000 episode actions over 200 podcasts whose feeds
    have catalogues of 500 episodes, at one connection; the history page again with the
    catalogue empty; then a feed check's catalogue cost, in-process (bench_catalogue_store)."""
    from datetime import UTC, datetime, timedelta

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from core.db import sql
    from episodes.models import EpisodeAction
    from feedchecks.catalogue import catalogue_store
    from feedchecks.models import FeedCheck, FeedEpisode
    from gpodder.services import devices_touch
    from subscriptions import feeds
    from subscriptions.models import Subscription
    from subscriptions.services import AddEntry, subscription_add_many
    from tests.factories import UserFactory
    from web import selectors

    print("The episode catalogue")
    started = time.perf_counter()
    user: Any = UserFactory()
    urls = [f"https://catalogue.example.com/{p}/feed.xml" for p in range(CATALOGUE_PODCASTS)]
    keys = [feeds.feed_key_digest(url) for url in urls]
    now = datetime.now(UTC)
    # Checked a moment ago, so that no check the adds ask for would fetch them again.
    checks = FeedCheck.objects.bulk_create(
        FeedCheck(
            key_digest=key,
            url=url,
            title=f"Show {p}",
            claimed=now,
            checked=now,
            result=FeedCheck.Result.NOTHING,
        )
        for p, (key, url) in enumerate(zip(keys, urls, strict=True))
    )
    subscription_add_many(user=user, entries=[AddEntry(feed_url=url) for url in urls])

    def store_catalogues() -> float:
        start = time.perf_counter()
        for p, check in enumerate(checks):
            catalogue_store(feed_id=check.pk, items=catalogue_items(p), kept=1000)
        return time.perf_counter() - start

    stored_s = store_catalogues()
    # Action n is on episode n // 200 of podcast n % 200, the latest last; half (the even
    # episodes) carry the guid, the others only the enclosure URL they are matched by.
    device = devices_touch(user=user, device_ids={"phone"})["phone"].pk
    last = now.replace(microsecond=0) - timedelta(minutes=1)
    step = timedelta(days=60) / CATALOGUE_ACTIONS
    for start in range(0, CATALOGUE_ACTIONS, 10_000):
        ns = range(start, min(CATALOGUE_ACTIONS, start + 10_000))
        spots = [(n % CATALOGUE_PODCASTS, n // CATALOGUE_PODCASTS) for n in ns]
        sent = [catalogue_episode(p, e) for p, e in spots]
        received = [last - (CATALOGUE_ACTIONS - 1 - n) * step for n in ns]
        columns: dict[str, list[Any]] = {
            "device": [device] * len(ns),
            "podcast": [urls[p] for p, _ in spots],
            "podcast_key": [keys[p] for p, _ in spots],
            "episode": [url for _, url in sent],
            "episode_key": [feeds.url_key_digest(url) for _, url in sent],
            "action": ["play"] * len(ns),
            "timestamp": [second - timedelta(minutes=5) for second in received],
            "received": [second.replace(microsecond=0) for second in received],
            "guid": [
                guid if e % 2 == 0 else "" for (guid, _), (_, e) in zip(sent, spots, strict=True)
            ],
            "started": [0] * len(ns),
            "position": [n % 3000 for n in ns],
            "total": [3000] * len(ns),
            "identity": [f"catalogue-{n}" for n in ns],
        }
        sql.insert(EpisodeAction, columns, same={"user": user.pk})
    tables = (EpisodeAction, FeedEpisode, FeedCheck)
    with connection.cursor() as cursor:
        for model in tables:  # as autovacuum would have, by the time it matters
            cursor.execute(f"VACUUM ANALYZE {model._meta.db_table}")
    row(
        "catalogue bench data: 100,000 actions, 200 feeds of 500 episodes",
        f"loaded in {time.perf_counter() - started:.1f} s "
        f"(the 200 catalogues stored in {stored_s:.1f} s)",
    )

    # Every one of the page's 500 actions is named from the catalogue, by guid or by URL.
    shown = [action for podcast in selectors.history(user=user) for action in podcast.actions]
    named = [action for action in shown if getattr(action, "catalogued", None) is not None]
    by_guid = sum(1 for action in named if action.guid)
    if len(shown) != selectors.HISTORY_ACTIONS or len(named) != len(shown):
        raise RuntimeError(f"the history shows {len(shown)} actions, {len(named)} named")
    cookie = signed_in_cookie(user)
    status, body, _ = page_get(app.port, "/history/", cookie)
    if status != 200 or b"the catalogue&#x27;s title" not in body:
        raise RuntimeError(f"the history page answered {status}, without the catalogue's titles")
    podcast_guid = Subscription.objects.get(user=user, feed_url=urls[0]).guid
    podcast_path = f"/podcasts/{podcast_guid}/"
    status, body, _ = page_get(app.port, podcast_path, cookie)
    if status != 200 or b"Show 0, episode 499" not in body:
        raise RuntimeError(f"the podcast page answered {status}, without its newest episode")

    def p50(path: str) -> float:
        took = timed_pages(app.port, path, cookie, seconds=max(3, SECONDS // 2))
        return percentile(took, 0.5)

    def export() -> str:
        """The whole export, read to its end or for EXPORT_SECONDS: what it took and held."""
        took, body, whole = export_read(app.port, cookie, EXPORT_SECONDS)
        if not whole:
            read = body.count(b'"action":')
            rate = read / took if read else 0.0
            end = f"about {CATALOGUE_ACTIONS / rate:,.0f} s for all" if rate else "none yet"
            return (
                f"NOT FINISHED in {took:.0f} s: {len(body) / 1e6:.1f} MB, {read:,} of "
                f"{CATALOGUE_ACTIONS:,} actions read ({end})"
            )
        actions = json.loads(body)["episode_actions"]
        if len(actions) != CATALOGUE_ACTIONS:
            raise RuntimeError(f"the export holds {len(actions)} actions")
        named = sum(1 for action in actions if action.get("episode_title"))
        return f"{took:.2f} s, {len(body) / 1e6:.1f} MB, {named:,} actions with an episode_title"

    def history_plan() -> list[str]:
        """EXPLAIN (ANALYZE, BUFFERS) of the history page's query of its 500 actions."""
        with CaptureQueriesContext(connection) as captured:
            selectors.history(user=user)
        [query] = [
            q["sql"]
            for q in captured.captured_queries
            if f"LIMIT {selectors.HISTORY_ACTIONS}" in q["sql"] and "LIMIT 1" in q["sql"]
        ]
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {query}")
            return [line for (line,) in cursor.fetchall()]

    def executed(plan: list[str]) -> str:
        line = next((line for line in plan if line.startswith("Execution Time")), "? ms")
        return line.split(": ")[-1]

    def catalogue_reads(plan: list[str]) -> str:
        """How the plan reads the catalogue: each scan of FeedEpisode, its loops, and the most
        rows a scan read and threw away (Rows Removed by Filter)."""
        scans = []
        for n, line in enumerate(plan):
            if f" on {FeedEpisode._meta.db_table} " in line:
                what = re.sub(r"\s*\(cost.*", "", line.split("->")[-1].strip())
                loops = re.search(r"loops=(\d+)", line)
                removed = next(
                    (
                        int(found[1])
                        for later in plan[n + 1 : n + 6]
                        if (found := re.search(r"Rows Removed by Filter: (\d+)", later))
                    ),
                    0,
                )
                scans.append(
                    f"{what.replace(f' on {FeedEpisode._meta.db_table}', '')}"
                    f" x {loops[1] if loops else '?'} ({removed:,} rows thrown away a loop)"
                )
        return "; ".join(scans) or "no scan of the catalogue"

    page_get(app.port, "/history/", cookie)  # warm up: the worker's connection, the caches
    with_catalogue = p50("/history/")
    podcast_ms = p50(podcast_path)
    exported = export()
    plan = history_plan()
    print("  plan of the history page's 500 actions, matched (EXPLAIN (ANALYZE, BUFFERS)):")
    for line in plan:
        print(f"    {line}")

    # The catalogue empty: the same page, every action's match looked for and none found.
    ids = [check.pk for check in checks]
    FeedEpisode.objects.filter(feed_id__in=ids).delete()
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM ANALYZE {FeedEpisode._meta.db_table}")
    status, body, _ = page_get(app.port, "/history/", cookie)
    if status != 200 or b"the catalogue&#x27;s title" in body:
        raise RuntimeError(f"the history page answered {status}, or with titles still")
    empty = p50("/history/")
    empty_plan = history_plan()
    exported_empty = export()

    # The catalogue stored again, and the page measured again: the host's load moves.
    restored_s = store_catalogues()
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM ANALYZE {FeedEpisode._meta.db_table}")
    again = p50("/history/")

    row(
        f"history page (500 of 100,000 actions, {by_guid} named by guid, the rest by URL), "
        "one connection: with the catalogue, empty, with it again",
        f"p50 {with_catalogue:.1f}, {empty:.1f} and {again:.1f} ms",
    )
    row(
        "history page, with the catalogue vs empty: p50 ratio",
        f"{with_catalogue / empty:.2f} / {again / empty:.2f}",
        "<= 1.5",
    )
    row(
        "history page's query of 500 actions (EXPLAIN ANALYZE), with the catalogue vs empty",
        f"{executed(plan)} vs {executed(empty_plan)}",
    )
    row("history page's query: the catalogue read by", catalogue_reads(plan))
    row(
        "podcast page (500 actions on it, 20 newest episodes), one connection",
        f"p50 {podcast_ms:.1f} ms",
    )
    row("everything.json export of 100,000 actions, with the catalogue", exported)
    row("everything.json export of 100,000 actions, the catalogue empty", exported_empty)
    row("catalogue stored again, 200 feeds of 500", f"{restored_s:.1f} s")
    bench_catalogue_store()


def bench_catalogue_store() -> None:
    """A feed check's catalogue work, in-process on the bench's PostgreSQL: parsing a feed's
    1,000 items, and catalogue_store's first store, a store of the same items again and one
    with 10 changed, each over 5 feeds (the median printed) with its SQL statements."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from feedchecks.catalogue import catalogue_store
    from feedchecks.models import FeedCheck
    from feedchecks.parsing import feed_identity
    from subscriptions import feeds

    def parsed(data: bytes, kept: int, times: int) -> tuple[float, Any]:
        took = []
        for _ in range(times):
            start = time.perf_counter()
            identity = feed_identity(data, episodes_kept=kept)
            took.append(time.perf_counter() - start)
        return statistics.median(took) * 1000, identity

    feed = catalogue_rss(1000)
    parse_ms, identity = parsed(feed, 1000, 5)
    if len(identity.episodes) != 1000:
        raise RuntimeError(f"the feed's parse kept {len(identity.episodes)} items, not 1,000")
    items = identity.episodes
    corrected = [parsed(catalogue_rss(1000, changed=10 * (k + 1)), 1000, 1)[1] for k in range(5)]
    big = catalogue_rss(10_000)
    big_ms, big_identity = parsed(big, 1000, 3)
    if len(big_identity.episodes) != 1000:
        raise RuntimeError(f"the big feed's parse kept {len(big_identity.episodes)} items")

    timed: dict[str, list[tuple[float, int, tuple[int, int]]]] = {
        "first": [],
        "same": [],
        "changed": [],
    }
    for k in range(5):
        url = f"https://catalogue-store.example.com/{k}/feed.xml"
        check = FeedCheck.objects.create(key_digest=feeds.feed_key_digest(url), url=url)
        # The k-th feed's change is 10 more titles than the feed before it had changed.
        changed = corrected[k].episodes
        base = items if k == 0 else corrected[k - 1].episodes
        for label, stored in (("first", base), ("same", base), ("changed", changed)):
            with CaptureQueriesContext(connection) as captured:
                start = time.perf_counter()
                result = catalogue_store(feed_id=check.pk, items=stored, kept=1000)
                took = time.perf_counter() - start
            timed[label].append((took * 1000, len(captured.captured_queries), result))
    expected = {"first": (1000, 0), "same": (0, 0), "changed": (10, 0)}
    for label, runs in timed.items():
        if any(result != expected[label] for _, _, result in runs):
            raise RuntimeError(f"the {label} stores wrote and pruned {[r for _, _, r in runs]}")

    def median_ms(label: str) -> str:
        runs = timed[label]
        statements = sorted({count for _, count, _ in runs})
        return (
            f"{statistics.median(ms for ms, _, _ in runs):.1f} ms, "
            f"{'/'.join(map(str, statements))} statement(s), {runs[0][2][0]:,} rows written"
        )

    print("A feed check's catalogue (in-process, on the bench's PostgreSQL)")
    row(
        f"parse a 1,000-item feed ({len(feed) / 1000:.0f} KB), feed_identity(episodes_kept=1000)",
        f"median {parse_ms:.0f} ms",
    )
    row(
        f"parse a 10,000-item feed ({len(big) / 1e6:.1f} MB), 1,000 kept",
        f"median {big_ms:.0f} ms",
    )
    row("catalogue_store, first check: 1,000 new items", median_ms("first"), "1 statement")
    row("catalogue_store, the same 1,000 items again", median_ms("same"), "1 statement, 0 rows")
    row("catalogue_store, 10 of 1,000 items changed", median_ms("changed"), "1 statement")


def play(podcast: int, episode: int, position: int = 61) -> dict[str, Any]:
    """A play action as AntennaPod uploads it."""
    return {
        "podcast": f"https://episodes.example.com/{podcast}/feed.xml",
        "episode": f"https://episodes.example.com/{podcast}/{episode}.mp3",
        "action": "play",
        "timestamp": "2024-05-01T10:30:00",
        "started": 0,
        "position": position,
        "total": 3600,
        "device": "phone",
        "guid": f"episode-{podcast}-{episode}",
    }


def insert_history(user: Any, count: int) -> int:
    """`count` play actions of the user's device "phone", inserted directly: 10 a second (an
    upload each), spread over 30 days up to a minute ago. Answers the second of the last 10."""
    from datetime import UTC, datetime, timedelta

    from core.db import sql
    from episodes.models import EpisodeAction
    from gpodder.services import devices_touch
    from subscriptions import feeds

    podcasts = [f"https://episodes.example.com/{n}/feed.xml" for n in range(100)]
    keys = [feeds.feed_key_digest(url) for url in podcasts]
    device = devices_touch(user=user, device_ids={"phone"})["phone"].pk
    last = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=1)
    step = timedelta(days=30) / (count // 10)
    for start in range(0, count, 10_000):
        ns = range(start, min(count, start + 10_000))
        received = [(last - (count - 1 - n) // 10 * step).replace(microsecond=0) for n in ns]
        columns: dict[str, list[Any]] = {
            "device": [device] * len(ns),
            "podcast": [podcasts[n % 100] for n in ns],
            "podcast_key": [keys[n % 100] for n in ns],
            "episode": [f"https://episodes.example.com/{n % 100}/{n}.mp3" for n in ns],
            "action": ["play"] * len(ns),
            "timestamp": [second - timedelta(minutes=5) for second in received],
            "received": received,
            "guid": [f"episode-{n}" for n in ns],
            "started": [0] * len(ns),
            "position": [n % 3600 for n in ns],
            "total": [3600] * len(ns),
            "identity": [f"bench-{n}" for n in ns],
        }
        sql.insert(EpisodeAction, columns, same={"user": user.pk})
    return int(last.timestamp())


def bench_episodes(app: Gunicorn) -> None:
    """Episode actions on the gpodder API, as apps sync them on one kept-alive connection, one
    request at a time, on the session cookie: a first sync's uploads, downloads from a long
    history, and an app's incremental round; compared with GET one, timed the same way."""
    from datetime import UTC, datetime

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from episodes.models import EpisodeAction
    from episodes.selectors import actions_since
    from subscriptions import services
    from tests.factories import UserFactory

    def app_session() -> tuple[GpodderSession, str, Any]:
        """A new user's app, logged in: its session, its episodes path, the user."""
        user: Any = UserFactory(with_password="bench-password")
        session = GpodderSession(app.port, user.username, "bench-password")
        session.call("POST", f"/api/2/auth/{user.username}/login.json")
        return session, f"/api/2/episodes/{user.username}.json", user

    print("Episode actions")
    reader: Any = UserFactory()
    [sub] = services.subscription_add_many(
        user=reader, entries=[services.AddEntry("https://episodes.example.com/one.xml")]
    ).success
    client = Client(app.port, token_for(reader))
    get_one = [client.call("GET", f"/v1/subscriptions/{sub.guid}") for _ in range(300)]
    if any(status != 200 for status, _, _ in get_one):
        raise RuntimeError("GET one failed")
    get_one_ms = percentile([elapsed for _, _, elapsed in get_one[100:]], 0.5) * 1000
    row("GET /v1/subscriptions/{guid}, one request at a time", f"p50 {get_one_ms:.2f} ms")

    # An app's first sync: 5,000 plays, in AntennaPod's batches of 30 and gPodder's of 100.
    plays = [play(podcast, episode) for podcast in range(50) for episode in range(100)]
    upload_ms = {}
    for batch in (30, 100):
        session, path, user = app_session()
        took = [session.call("POST", path, plays[i : i + batch])[1] for i in range(0, 5000, batch)]
        stored = EpisodeAction.objects.filter(user=user).count()
        if stored != 5000:
            raise RuntimeError(f"the uploads of {batch} stored {stored} actions")
        upload_ms[batch] = percentile(took, 0.5) * 1000
        row(
            f"episode first sync: 5,000 plays in uploads of {batch}",
            f"{len(took) / sum(took):.0f} req/s ({5000 / sum(took):,.0f} actions/s), "
            f"p50 {upload_ms[batch]:.2f} ms",
        )
    row("episode upload of 30 vs GET one: p50 ratio", f"{upload_ms[30] / get_one_ms:.1f}", "<= 5")

    podcasts = [f"https://episodes.example.com/{n}/feed.xml" for n in range(100)]

    def with_history(count: int) -> tuple[GpodderSession, str, Any, int]:
        """A user with `count` actions; also the second of the last 10."""
        session, path, user = app_session()
        return session, path, user, insert_history(user, count)

    small, small_path, _, small_last = with_history(1_000)
    big, big_path, big_user, big_last = with_history(100_000)
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM ANALYZE {EpisodeAction._meta.db_table}")  # as autovacuum would
    for conn in (small.conn, big.conn):
        conn.close()  # idle past gunicorn's keep-alive: the next request connects anew

    def pages() -> tuple[float, int, set[str]]:
        """A download since=0, the answered timestamp the next since while an answer holds a
        whole page (1,000: downloads were paged so once; now one answer holds everything), 5
        answers at most: its time, answers and the episodes read."""
        since = 0
        answers: list[tuple[Any, float]] = []
        while len(answers) < 5 and (not answers or len(answers[-1][0]["actions"]) == 1000):
            answers.append(big.call("GET", f"{big_path}?since={since}"))
            since = answers[-1][0]["timestamp"]
        read = {action["episode"] for answer, _ in answers for action in answer["actions"]}
        return sum(took for _, took in answers), len(answers), read

    downloads = [pages() for _ in range(5)]
    total_ms = percentile([elapsed for elapsed, _, _ in downloads], 0.5) * 1000
    _, read_pages, read = downloads[0]
    row(
        "episode download since=0 of 100,000 (pages of 1,000 followed, 5 at most)",
        f"p50 {total_ms:.0f} ms for {read_pages} answer(s), {len(read):,} actions "
        f"({total_ms / read_pages:.1f} ms an answer; a page's last second is read again)",
    )

    # The two in turn on one connection: one worker (the kernel hashes each connection to one)
    # and the same moments of the host's load.
    small.conn.close()  # idle for a while: the next request connects anew
    big.conn.close()
    big.conn = small.conn
    times: dict[str, list[float]] = {small_path: [], big_path: []}
    for _ in range(200):
        for session, path, last in ((small, small_path, small_last), (big, big_path, big_last)):
            answer, elapsed = session.call("GET", f"{path}?since={last - 1}")
            if len(answer["actions"]) != 10:
                raise RuntimeError(f"a download since {last - 1} did not answer 10 actions")
            times[path].append(elapsed)
    small_ms, big_ms = (percentile(times[path][20:], 0.5) * 1000 for path in (small_path, big_path))
    row(
        "episode download of the last 10, of 1,000 and of 100,000",
        f"p50 {small_ms:.2f} and {big_ms:.2f} ms",
    )
    row(
        "episode download of the last 10: 100,000 vs 1,000, p50 ratio",
        f"{big_ms / small_ms:.2f}",
        "flat (about 1)",
    )

    # The plan of that download's query, as it runs: its parameters, bound on the server ($1,
    # $2), are the user and the since.
    with CaptureQueriesContext(connection) as captured:
        list(actions_since(user=big_user, since=big_last - 1))
    [page_query] = [q["sql"] for q in captured.captured_queries if "ORDER BY" in q["sql"]]
    since = datetime.fromtimestamp(big_last - 1, UTC)
    with connection.cursor() as cursor:
        cursor.execute(
            f"EXPLAIN (ANALYZE, BUFFERS) {re.sub(r'[$][0-9]+', '%s', page_query)}",
            [big_user.pk, since],
        )
        plan = [line for (line,) in cursor.fetchall()]
    print("  plan of the download of the last 10 of 100,000 (EXPLAIN (ANALYZE, BUFFERS)):")
    for line in plan:
        print(f"    {line}")
    buffers = next((line.strip() for line in plan if "Buffers:" in line), "no buffers line")
    uses = "episodeaction_received_idx" in "\n".join(plan)
    row(
        "episode download of the last 10 of 100,000: plan",
        f"{'uses' if uses else 'DOES NOT USE'} episodeaction_received_idx; {buffers}",
    )

    # An app's incremental round, a while after the last: pull subscription changes, upload a
    # play, pull episode actions, each since what the round before was answered.
    subscriptions = f"/api/2/subscriptions/{big_user.username}/phone.json"
    big.call("POST", subscriptions, {"add": podcasts, "remove": []})
    subscriptions_since = big.call("GET", f"{subscriptions}?since=0")[0]["timestamp"]
    actions_since = big.call("GET", f"{big_path}?since={big_last}")[0]["timestamp"]
    rounds, pulled = [], []
    for n in range(20):
        # Past the timestamp answered (a second before, less the clocks' skew), so each pull
        # holds this round's upload and the one before, not every round's.
        time.sleep(2)
        changes, pull_took = big.call("GET", f"{subscriptions}?since={subscriptions_since}")
        upload_took = big.call("POST", big_path, [play(0, 0, position=n)])[1]
        answer, download_took = big.call("GET", f"{big_path}?since={actions_since}")
        subscriptions_since, actions_since = changes["timestamp"], answer["timestamp"]
        rounds.append(
            (pull_took + upload_took + download_took, pull_took, upload_took, download_took)
        )
        pulled.append(len(answer["actions"]))
    each = [percentile([r[i] for r in rounds], 0.5) * 1000 for i in range(4)]
    row(
        "episode incremental round: pull subscriptions, upload a play, pull actions",
        f"p50 {each[0]:.2f} ms ({each[1]:.2f} + {each[2]:.2f} + {each[3]:.2f}; "
        f"{min(pulled)} to {max(pulled)} actions pulled)",
    )
    row("episode incremental round vs GET one: p50 ratio", f"{each[0] / get_one_ms:.1f}", "<= 3")
    for conn in (big.conn, client.conn):
        conn.close()


def bench_nextcloud(app: Gunicorn) -> None:
    """The Nextcloud paths' incremental round as AntennaPod's Nextcloud option makes it, Basic on
    every request and no cookie: pull subscription changes, upload a play, pull episode actions,
    each since what the round before was answered; beside the gpodder API's round (above)."""
    from tests.factories import UserFactory

    print("Nextcloud gPodder Sync API")
    user: Any = UserFactory(with_password="bench-password")
    app_conn = GpodderSession(app.port, user.username, "bench-password")
    base = "/index.php/apps/gpoddersync"
    podcasts = [f"https://nextcloud.example.com/{n}.xml" for n in range(100)]
    app_conn.call("POST", f"{base}/subscription_change/create", {"add": podcasts, "remove": []})
    for start in range(0, 300, 30):  # a first sync's plays, in AntennaPod's batches
        batch = [play(n % 100, n) for n in range(start, start + 30)]
        app_conn.call("POST", f"{base}/episode_action/create", batch, auth=True)
    subscriptions_since = app_conn.call("GET", f"{base}/subscriptions?since=0", auth=True)[0][
        "timestamp"
    ]
    actions_since = app_conn.call("GET", f"{base}/episode_action?since=0", auth=True)[0][
        "timestamp"
    ]
    gpodder = GpodderSession(app.port, user.username, "bench-password")
    gpodder.call("POST", f"/api/2/auth/{user.username}/login.json")
    gpodder_paths = (
        f"/api/2/subscriptions/{user.username}/phone.json",
        f"/api/2/episodes/{user.username}.json",
    )
    gpodder_since = [
        gpodder.call("GET", f"{path}?since=0")[0]["timestamp"] for path in gpodder_paths
    ]
    nextcloud, cookie = [], []
    for n in range(20):
        time.sleep(2)  # past the timestamps answered, as for the gpodder round above
        changes, pull_took = app_conn.call(
            "GET", f"{base}/subscriptions?since={subscriptions_since}", auth=True
        )
        upload_took = app_conn.call(
            "POST", f"{base}/episode_action/create", [play(0, 0, position=n)], auth=True
        )[1]
        answer, download_took = app_conn.call(
            "GET", f"{base}/episode_action?since={actions_since}", auth=True
        )
        subscriptions_since, actions_since = changes["timestamp"], answer["timestamp"]
        nextcloud.append(
            (pull_took + upload_took + download_took, pull_took, upload_took, download_took)
        )
        # The same round on the gpodder API, on its session cookie, by the same account.
        pulled, took_pull = gpodder.call("GET", f"{gpodder_paths[0]}?since={gpodder_since[0]}")
        took_upload = gpodder.call("POST", gpodder_paths[1], [play(1, 1, position=n)])[1]
        got, took_download = gpodder.call("GET", f"{gpodder_paths[1]}?since={gpodder_since[1]}")
        gpodder_since = [pulled["timestamp"], got["timestamp"]]
        cookie.append(
            (took_pull + took_upload + took_download, took_pull, took_upload, took_download)
        )
    for label, rounds in (
        ("nextcloud incremental round, Basic every time", nextcloud),
        ("gpodder incremental round beside it, cookie", cookie),
    ):
        each = [percentile([r[i] for r in rounds], 0.5) * 1000 for i in range(4)]
        row(
            f"{label}: pull subscriptions, upload a play, pull actions",
            f"p50 {each[0]:.2f} ms ({each[1]:.2f} + {each[2]:.2f} + {each[3]:.2f})",
        )
    app_conn.conn.close()
    gpodder.conn.close()


# --- sync: AntennaPod's requests beside GET one, and bench/apps.py's load ----------------------

# bench_sync's apps (each a user of its own) take turns on one connection, so that each app's
# requests come seconds apart, as a real app's syncs do: a download then holds the app's last
# upload, not all of the last two seconds' (the answered timestamp lies two seconds back).
SYNC_APPS = 100
PASSWORD = "bench-password"


class NextcloudApp(apps.App):
    """AntennaPod in Nextcloud mode (NextcloudSyncService): Basic and `Accept: application/json`
    on every request, no cookie; after an upload it keeps its own clock as its next `since`."""

    BASE = "/index.php/apps/gpoddersync"

    def __init__(self, url: str, user: str, conn: http.client.HTTPConnection):
        super().__init__(url, user, PASSWORD, "", conn=conn, basic_always=True, cookies=False)
        self.headers["Accept"] = "application/json"

    def pull_subscriptions(self) -> float:
        path = f"{self.BASE}/subscriptions?since={self.subscriptions_since}"
        status, answer, took = self.call("GET", path)
        if status == 200:
            self.subscriptions_since = answer["timestamp"]
        return took

    def pull_actions(self) -> float:
        status, answer, took = self.call(
            "GET", f"{self.BASE}/episode_action?since={self.actions_since}"
        )
        if status == 200:
            self.actions_since = answer["timestamp"]
            self.pulled.append(len(answer["actions"]))
        return took

    def upload_actions(self, actions: list[dict[str, Any]]) -> float:
        sent = [{k: v for k, v in action.items() if k != "device"} for action in actions]
        took = self.call("POST", f"{self.BASE}/episode_action/create", sent)[2]
        self.actions_since = int(time.time())
        return took


def sync_users(count: int) -> list[Any]:
    """`count` new users with PASSWORD (hashed once: Argon2 is slow on purpose)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password

    from tests.factories import UserFactory

    users: list[Any] = [UserFactory() for _ in range(count)]
    hashed = make_password(PASSWORD)
    get_user_model().objects.filter(pk__in=[user.pk for user in users]).update(password=hashed)
    return users


def bench_sync(app: Gunicorn) -> None:
    """AntennaPod's sync requests, on the gpodder API (Basic on the login, then the cookie; or
    Basic on every request with the cookie kept, as Kasts) and on the Nextcloud paths, one at a
    time on one kept-alive connection, each after a GET one timed the same way on its own
    connection: a ratio of two p50s taken at the same moments. Each figure takes the SYNC_APPS
    apps in turn three times over, the first time a warm-up. Then 4 devices of one user at once
    against 1 (bench/apps.py's rounds), and a download from 0 of 100,000 actions."""
    from subscriptions import services
    from tests.factories import UserFactory

    print("Sync: AntennaPod's requests, one at a time on one connection, beside GET one")
    url = f"http://127.0.0.1:{app.port}"
    reader: Any = UserFactory()
    [sub] = services.subscription_add_many(
        user=reader, entries=[services.AddEntry("https://sync.example.com/one.xml")]
    ).success
    client = Client(app.port, token_for(reader))
    conn = http.client.HTTPConnection("127.0.0.1", app.port, timeout=60)
    users = sync_users(SYNC_APPS)
    gpodder = [apps.App(url, user.username, PASSWORD, "phone", conn=conn) for user in users]
    for one in gpodder:  # a first sync, small
        one.login()
        one.upload_subscriptions(one.feeds(20))
        one.subscriptions_since = 0
        one.pull_subscriptions()
        one.upload_actions(one.plays(30))
        one.actions_since = 0
        one.pull_actions()

    def timed(group: list[Any], request: Callable[[Any], float]) -> tuple[float, float]:
        """p50s in ms of `request` and of the GET ones before them, warm-up left out."""
        took, get_one = [], []
        for n in range(3 * len(group)):
            status, _, get_took = client.call("GET", f"/v1/subscriptions/{sub.guid}")
            request_took = request(group[n % len(group)])
            if status != 200:
                raise RuntimeError(f"GET one answered {status}")
            if n >= len(group):
                took.append(request_took)
                get_one.append(get_took)
        bad = Counter(
            status
            for one in group
            for phase in one.phases.values()
            for status in phase.statuses.elements()
            if status != 200
        )
        if bad:
            raise RuntimeError(f"sync requests answered {dict(bad)}")
        return percentile(took, 0.5) * 1000, percentile(get_one, 0.5) * 1000

    def versus(label: str, took: float, get_one: float, target: str) -> float:
        ratio = took / get_one
        row(
            f"{label} vs GET one",
            f"{ratio:.2f} (p50 {took:.2f} ms, GET one {get_one:.2f} ms)",
            target,
        )
        return ratio

    def kasts(on: bool) -> None:
        for one in gpodder:
            one.basic_always = on

    for label, request in (
        ("pull of subscriptions (nothing new)", apps.App.pull_subscriptions),
        ("pull of episode actions", apps.App.pull_actions),
        ("upload of one play", apps.App.upload_play),
    ):
        by_cookie, get_one = timed(gpodder, request)
        versus(f"sync: gpodder {label}, cookie", by_cookie, get_one, "<= 2")
        kasts(True)
        by_basic, _ = timed(gpodder, request)
        kasts(False)
        row(
            f"sync: gpodder {label}, Basic every request (cookie kept) vs cookie",
            f"{by_basic / by_cookie:.2f} (p50 {by_basic:.2f} and {by_cookie:.2f} ms)",
            "<= 1.5",
        )
    took, get_one = timed(gpodder, lambda one: one.upload_actions(one.plays(30)))
    versus("sync: gpodder upload of 30 plays, cookie", took, get_one, "<= 3")
    took, get_one = timed(gpodder, apps.App.round)
    pulled = statistics.median(n for one in gpodder for n in one.pulled[-2:])
    ratio = versus("sync: gpodder incremental round (3 requests), cookie", took, get_one, "<= 5")
    row(
        "sync: gpodder incremental round vs GET one, our API document's target",
        f"{ratio:.2f}",
        "<= 3",
    )
    print(f"  (a round's download held {pulled:.0f} actions, median)")

    nextcloud = [NextcloudApp(url, user.username, conn) for user in users]
    for label, nextcloud_request in (
        ("pull of subscriptions (nothing new)", NextcloudApp.pull_subscriptions),
        ("pull of episode actions", NextcloudApp.pull_actions),
        ("upload of one play", NextcloudApp.upload_play),
    ):
        took, get_one = timed(nextcloud, nextcloud_request)
        versus(f"sync: nextcloud {label}, Basic every request", took, get_one, "<= 2")
    took, get_one = timed(nextcloud, NextcloudApp.round)
    ratio = versus("sync: nextcloud incremental round (3 requests)", took, get_one, "<= 5")
    row(
        "sync: nextcloud incremental round vs GET one, our API document's target",
        f"{ratio:.2f}",
        "<= 3",
    )
    bench_sync_events(app, users, gpodder, nextcloud)
    conn.close()
    client.conn.close()

    print("  4 devices of one user at once, then 1 device (bench/apps.py, a small first sync):")
    one_device, four_devices = (user.username for user in sync_users(2))
    four = apps.run(url, four_devices, PASSWORD, apps=4, subscriptions=100, plays=30)
    single = apps.run(url, one_device, PASSWORD, apps=1, subscriptions=100, plays=30)
    row(
        "sync: 4 devices of one user at once vs 1 device, answers per second",
        f"{four.ok_per_s / single.ok_per_s:.2f} ({four.ok_per_s:.0f} and {single.ok_per_s:.0f} "
        f"ok/s){problems(four)}{problems(single)}",
        ">= 1.6",
    )
    bench_big_download(app)


def bench_sync_events(
    app: Gunicorn, users: list[Any], gpodder: list[apps.App], nextcloud: list[NextcloudApp]
) -> None:
    """The device sync events' write (gpodder.diagnostics), one statement a sync request: the
    same requests of the same users against the service as it runs and against a second one with
    DEVICE_SYNC_EVENTS=false on the same database, one after the other (which goes first
    alternates), warm-up left out; the ratio of the two p50s."""
    print("  The device sync events' write, with it and without it (DEVICE_SYNC_EVENTS=false):")
    log = app.log.with_name("app-without-sync-events.log")
    without = Gunicorn("config.wsgi", {**app.env, "DEVICE_SYNC_EVENTS": "false"}, log)
    with running(without):
        without.start()
        url = f"http://127.0.0.1:{without.port}"
        conn = http.client.HTTPConnection("127.0.0.1", without.port, timeout=60)
        plain = [apps.App(url, user.username, PASSWORD, "phone", conn=conn) for user in users]
        plain_nextcloud = [NextcloudApp(url, user.username, conn) for user in users]
        pairs = (*zip(plain, gpodder, strict=True), *zip(plain_nextcloud, nextcloud, strict=True))
        for one, kept in pairs:
            one.subscriptions_since = kept.subscriptions_since
            one.actions_since = kept.actions_since
        for one in plain:
            one.login()

        def paired(
            label: str, noted: list[Any], not_noted: list[Any], request: Callable[[Any], float]
        ) -> None:
            took: dict[bool, list[float]] = {True: [], False: []}
            for n in range(3 * len(noted)):
                for on in (True, False) if n % 2 else (False, True):
                    request_took = request((noted if on else not_noted)[n % len(noted)])
                    if n >= len(noted):
                        took[on].append(request_took)
            bad = Counter(
                status
                for one in (*noted, *not_noted)
                for phase in one.phases.values()
                for status in phase.statuses.elements()
                if status != 200
            )
            if bad:
                raise RuntimeError(f"sync requests answered {dict(bad)}")
            yes, no = (percentile(took[on], 0.5) * 1000 for on in (True, False))
            row(
                f"sync: {label}, with the sync event's write vs without",
                f"{yes / no:.2f} (p50 {yes:.2f} and {no:.2f} ms)",
            )

        paired(
            "gpodder pull of subscriptions (nothing new), cookie",
            gpodder,
            plain,
            apps.App.pull_subscriptions,
        )
        paired("gpodder pull of episode actions, cookie", gpodder, plain, apps.App.pull_actions)
        paired("gpodder upload of one play, cookie", gpodder, plain, apps.App.upload_play)
        paired("gpodder incremental round (3 requests), cookie", gpodder, plain, apps.App.round)
        paired(
            "nextcloud pull of subscriptions (nothing new)",
            nextcloud,
            plain_nextcloud,
            NextcloudApp.pull_subscriptions,
        )
        paired(
            "nextcloud pull of episode actions",
            nextcloud,
            plain_nextcloud,
            NextcloudApp.pull_actions,
        )
        paired("nextcloud upload of one play", nextcloud, plain_nextcloud, NextcloudApp.upload_play)
        paired(
            "nextcloud incremental round (3 requests)",
            nextcloud,
            plain_nextcloud,
            NextcloudApp.round,
        )
        conn.close()


def problems(summary: apps.Summary) -> str:
    found = [f"{summary.not_200} not 200"] if summary.not_200 else []
    found += [f"{summary.missing} lost"] if summary.missing else []
    found += summary.failed
    return f"; {summary.apps} app(s): {', '.join(found)}" if found else ""


def worker_peaks(app: Gunicorn, reset: bool = False) -> dict[int, tuple[float, float]]:
    """Each web worker's peak resident set (VmHWM, MB) and CPU seconds so far; `reset`: its
    peak set back to its resident set first (where the kernel lets this process)."""
    found = {}
    for pid in app.workers():
        if reset:
            with contextlib.suppress(OSError):
                Path(f"/proc/{pid}/clear_refs").write_text("5")
        status = Path(f"/proc/{pid}/status").read_text()
        peak = int(re.search(r"VmHWM:\s+(\d+) kB", status)[1]) / 1024  # type: ignore[index]
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        found[pid] = (peak, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"))
    return found


def bench_big_download(app: Gunicorn) -> None:
    """An episode download from 0 of a user's 100,000 actions, three times: how many came back
    in the one answer, its time and size, and the peak RSS of the worker that served it (the
    one whose CPU time grew the most), each worker's peak set back to its RSS before each."""
    from django.db import connection

    from episodes.models import EpisodeAction

    [user] = sync_users(1)
    insert_history(user, 100_000)
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM ANALYZE {EpisodeAction._meta.db_table}")
    one = apps.App(f"http://127.0.0.1:{app.port}", user.username, PASSWORD, "phone")
    one.login()
    downloads = []
    for _ in range(3):
        before = worker_peaks(app, reset=True)
        status, answer, took = one.call("GET", f"/api/2/episodes/{user.username}.json?since=0")
        if status != 200:
            raise RuntimeError(f"the download from 0 answered {status}")
        after = worker_peaks(app)
        served = max(after, key=lambda pid: after[pid][1] - before.get(pid, (0.0, 0.0))[1])
        downloads.append(
            (took, len(answer["actions"]), one.last_bytes, before[served][0], after[served][0])
        )
    took_ms = percentile([took for took, *_ in downloads], 0.5) * 1000
    _, count, size, peak_before, peak_after = downloads[0]
    row(
        "sync: episode download from 0 of 100,000 actions, one request",
        f"{count:,} actions in one answer, {size / 1e6:.1f} MB, p50 {took_ms:.0f} ms; the worker "
        f"that served it: RSS {peak_before:.0f} MB before, peak {peak_after:.0f} MB (the first "
        f"download; the highest peak of the three {max(peak for *_, peak in downloads):.0f} MB)",
        "100,000 in one answer",
    )
    one.conn.close()


def bench_apps(pg: servers.Server, redis_server: servers.RedisServer, logs: Path) -> None:
    """bench/apps.py's load (an AntennaPod first sync of 1,000 URLs and 5,000 plays, then 200
    rounds with no pause) for 1 and for 4 devices of one user, on the bench's PostgreSQL (fsync
    off) and then on a new one with PostgreSQL's defaults (each commit waits for the disk)."""
    print("AntennaPod's sync, 1 and 4 devices of one user (bench/apps.py)")
    found: dict[tuple[str, int], apps.Summary] = {}
    for label, durable, redis_db in (("fsync off", False, 2), ("defaults (durable)", True, 4)):
        with servers.postgres(durable=True) if durable else contextlib.nullcontext(pg) as server:
            env = service_on(
                server, "opa_apps", f"redis://127.0.0.1:{redis_server.port}/{redis_db}"
            )
            service = Gunicorn("config.wsgi", env, logs / f"apps-{redis_db}.log")
            with running(service):
                service.start()
                for count in (1, 4):
                    print(f"  PostgreSQL {label}:")
                    summary = apps.run(
                        f"http://127.0.0.1:{service.port}", f"apps{count}", PASSWORD, apps=count
                    )
                    found[label, count] = summary
                    row(
                        f"apps: {count} device(s), PostgreSQL {label}",
                        f"rounds {summary.ok_per_s:.0f} ok/s, p50 {summary.request_p50_ms:.2f} ms "
                        f"a request, {summary.round_p50_ms:.2f} ms a round; first sync p50: "
                        f"1,000 URLs {summary.phase_p50_ms['subscriptions upload']:.0f} ms, 30 "
                        f"plays {summary.phase_p50_ms['plays upload, 30 a request']:.1f} ms"
                        f"{problems(summary)}",
                    )
    for count in (1, 4):
        on_disk, fast = found["defaults (durable)", count], found["fsync off", count]
        row(
            f"apps: {count} device(s), rounds' ok/s, PostgreSQL defaults vs fsync off",
            f"{on_disk.ok_per_s / fast.ok_per_s:.2f}",
        )
    for label in ("fsync off", "defaults (durable)"):
        four, one = found[label, 4], found[label, 1]
        row(
            f"apps: 4 devices vs 1, rounds' ok/s, PostgreSQL {label}",
            f"{four.ok_per_s / one.ok_per_s:.2f}",
            ">= 1.6",
        )


def service_on(pg: servers.Server, database: str, redis_url: str) -> dict[str, str]:
    """The service's environment on a new `database` of `pg`, migrated, with the users apps1 and
    apps4 (in subprocesses: this process's Django stays on the bench's database)."""
    import psycopg

    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://postgres@{pg.host}:{pg.port}/{database}",
        "REDIS_URL": redis_url,
    }
    with psycopg.connect(f"postgresql://postgres@{pg.host}:{pg.port}/postgres") as conn:
        conn.autocommit = True
        conn.execute(f"CREATE DATABASE {database}")
    users = (
        "from django.contrib.auth import get_user_model\n"
        "for name in ('apps1', 'apps4'):\n"
        f"    get_user_model().objects.create_user(name, password={PASSWORD!r})\n"
    )
    for command in (["migrate", "--noinput", "-v", "0"], ["shell", "-c", users]):
        done = subprocess.run(
            [sys.executable, "manage.py", *command],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        if done.returncode:
            raise RuntimeError(f"manage.py {command[0]} failed:\n{done.stderr[-2000:]}")
    return env


def profile(app: Gunicorn, path: str, token: str) -> None:
    """py-spy, sampling one web worker while wrk loads them all."""
    target = OUT / "get-one.speedscope.json"
    spy = subprocess.Popen(
        [str(Path(sys.executable).parent / "py-spy"), "record", "--pid", str(app.workers()[0]),
         "--duration", str(SECONDS), "--rate", "500", "--format", "speedscope",
         "--output", str(target), "--nonblocking"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    wrk(app.port, path, token)
    spy.wait(timeout=60)
    print(f"  profile of GET one: {target} (open in https://www.speedscope.app)")


def bench_deletions(app: Gunicorn, env: dict[str, str], logs: Path) -> None:
    from deletions.models import Deletion
    from subscriptions import services
    from tests.factories import UserFactory

    user: Any = UserFactory()
    client = Client(app.port, token_for(user))

    def subscribe(prefix: str, count: int) -> list[str]:
        guids = []
        for start in range(0, count, 500):
            entries = [
                services.AddEntry(f"https://{prefix}.example.com/{n}.xml")
                for n in range(start, min(count, start + 500))
            ]
            added = services.subscription_add_many(user=user, entries=entries).success
            guids += [str(sub.guid) for sub in added]
        return guids

    def delete(guid: str) -> int:
        status, body, _ = client.call("DELETE", f"/v1/subscriptions/{guid}")
        assert status == 202, (status, body)
        return int(body["deletion_id"])

    print("Deletions")
    # Adds ask for feed checks, as in production; the bench's feeds are made up, so no worker
    # here fetches them.
    worker = servers.Worker(env, logs / "idle.log").start(
        concurrency=2, beat=False, queues="deletions"
    )
    with running(worker):
        wait_for(lambda: "ready." in worker.log.read_text(), 60, "the idle worker")
        latencies = []
        for guid in subscribe("latency", 200):
            start = time.perf_counter()
            deletion_id = delete(guid)
            while Deletion.objects.filter(pk=deletion_id, status="PENDING").exists():
                time.sleep(0.001)
            latencies.append(time.perf_counter() - start)
    ms = [s * 1000 for s in latencies]
    row(
        "DELETE -> SUCCESS, idle worker",
        f"p50 {percentile(ms, 0.5):.0f} ms, p95 {percentile(ms, 0.95):.0f} ms",
        "p50 <= 200 ms",
    )

    # Queued with no worker running, so the drain is the workers' own speed.
    ids = [delete(guid) for guid in subscribe("drain", 1000)]
    workers = [servers.Worker(env, logs / f"drain{n}.log") for n in range(2)]
    with running(*workers):
        start = time.perf_counter()
        for n, drainer in enumerate(workers):
            drainer.start(concurrency=1, beat=False, name=f"drain{n}", queues="deletions")
        wait_for(
            lambda: not Deletion.objects.filter(pk__in=ids, status="PENDING").exists(),
            600,
            "the drain",
        )
        drained = time.perf_counter() - start
    done = Deletion.objects.filter(pk__in=ids, status="SUCCESS").count()
    row(
        "1,000 deletions, 2 workers",
        f"drained in {drained:.1f} s from their start ({1000 / drained:.0f}/s), {done} SUCCESS",
    )


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.001)


def bench_calls() -> None:
    """Python function calls per request, in this process through Django's WSGI handler: unlike
    times, the same on every run and every machine."""
    import cProfile
    import io
    import pstats

    from django.core.handlers.wsgi import WSGIHandler

    from accounts import authentication as auth
    from subscriptions import services
    from tests.factories import UserFactory

    user: Any = UserFactory()
    token = token_for(user)
    entries = [services.AddEntry(f"https://calls.example.com/{i}") for i in range(50)]
    first = services.subscription_add_many(user=user, entries=entries).success[0]
    handler = WSGIHandler()

    def calls(url: str) -> int:
        path, _, query = url.partition("?")
        environ = {
            "REQUEST_METHOD": "GET",
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "80",
            "HTTP_HOST": "127.0.0.1",
            "HTTP_AUTHORIZATION": f"Bearer {token}",
            "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(),
        }
        auth.active_users.add(user.pk, auth.password_mark(user.password))  # as while an app syncs
        status: list[str] = []

        def start_response(answered: str, headers: Any, *exc_info: Any) -> Any:
            status.append(answered)
            return io.BytesIO().write

        profile = cProfile.Profile()
        profile.enable()
        body = b"".join(handler(environ, start_response))
        profile.disable()
        if not status[0].startswith("200"):
            raise RuntimeError(f"{url} answered {status[0]}: {body[:300]!r}")
        return pstats.Stats(profile).total_calls  # type: ignore[attr-defined]

    print("Python calls per request")
    for name, url in (
        ("GET /v1/subscriptions/{guid}", f"/v1/subscriptions/{first.guid}"),
        ("GET /v1/subscriptions, 50 items", "/v1/subscriptions?per_page=50"),
    ):
        # The fewest of a few: the first of a kind fills caches, and one in THROTTLE_SYNC_SECONDS
        # also sends the throttle's counts to Redis.
        row(f"Python calls: {name}", f"{min(calls(url) for _ in range(5)):,}")


def gpodder_query_counter() -> tuple[str, Callable[..., int]]:
    """A new user's gpodder app in-process, logged in (the session cookie): the username, and a
    function that makes a request and answers how many SQL queries it made."""
    from django.db import connection
    from django.test import Client as DjangoClient
    from django.test.utils import CaptureQueriesContext

    from tests.factories import UserFactory

    user: Any = UserFactory(with_password="bench-password")
    client = DjangoClient()
    basic = "Basic " + b64encode(f"{user.username}:bench-password".encode()).decode()
    client.post(f"/api/2/auth/{user.username}/login.json", HTTP_AUTHORIZATION=basic)

    def queries(method: str, path: str, body: Any = None) -> int:
        with CaptureQueriesContext(connection) as captured:
            response = getattr(client, method)(
                path, data=json.dumps(body) if body else None, content_type="application/json"
            )
            if response.streaming:  # what it reads, and notes, while the answer is written
                b"".join(response.streaming_content)
        assert response.status_code == 200, (
            path,
            response.status_code,
            getattr(response, "content", b"")[:300],
        )
        return len(captured.captured_queries)

    return user.username, queries


def bench_gpodder_queries() -> None:
    """SQL queries of the gpodder API's sync requests, on the session cookie: the same for 10 URLs
    as for 1,000, and for one device as for twenty."""
    name, queries = gpodder_query_counter()
    counter = iter(range(10**9))

    def upload(n: int) -> int:
        batch = next(counter)
        urls = [f"https://gq.example.com/{batch}/{i}" for i in range(n)]
        return queries("post", f"/api/2/subscriptions/{name}/phone.json", {"add": urls})

    def pull_with_devices(devices: int) -> int:
        for device in range(devices):
            queries("get", f"/api/2/subscriptions/{name}/d{device}.json?since=0")
        # A pull whose answered timestamp moved since the device's last also notes it (one
        # query more, docs/gpodder-api.md "Timestamps"): the pull counted follows one of its own.
        queries("get", f"/api/2/subscriptions/{name}/d0.json?since=0")
        return queries("get", f"/api/2/subscriptions/{name}/d0.json?since=0")

    upload(1)  # the device's first request creates it
    for label, run, small, large, unit in (
        ("gpodder upload", upload, 10, 1000, "URLs"),
        ("gpodder pull since=0", pull_with_devices, 1, 20, "devices"),
    ):
        few, many = run(small), run(large)
        verdict = "constant" if few == many else "GROWS"
        row(
            f"queries: {label}",
            f"{few} at {small} {unit}, {many} at {large}: {verdict}",
            "constant",
        )
    before = queries("get", f"/api/2/subscriptions/{name}/phone.json?since=0")
    upload(1000)
    after = queries("get", f"/api/2/subscriptions/{name}/phone.json?since=0")
    verdict = "constant" if before == after else "GROWS"
    row(
        "queries: gpodder pull since=0, by subscriptions",
        f"{before} at 1,010, {after} at 2,010: {verdict}",
        "constant",
    )


def bench_episodes_queries() -> None:
    """SQL queries of episode action uploads and downloads, on the session cookie: the same for
    1 action as for 1,000."""

    name, queries = gpodder_query_counter()
    path = f"/api/2/episodes/{name}.json"
    counter = iter(range(10**9))

    def upload(n: int) -> int:
        batch = next(counter)
        return queries("post", path, [play(batch, episode) for episode in range(n)])

    upload(1)  # the device's first upload creates it
    download_one = queries("get", f"{path}?since=0")
    few, many = upload(1), upload(1000)
    verdict = "constant" if few == many else "GROWS"
    row("queries: episode upload", f"{few} at 1 action, {many} at 1,000: {verdict}", "constant")
    download_page = queries("get", f"{path}?since=0")
    # 1,002 actions: a long answer, written as its two chunks are read (episodes.selectors).
    verdict = "constant" if download_one == download_page - 1 else "GROWS"
    row(
        "queries: episode download since=0",
        f"{download_one} at 1 action, {download_page} at 1,002 (one chunk more): {verdict}",
        "constant",
    )


def bench_nextcloud_queries() -> None:
    """SQL queries of the Nextcloud paths' incremental round, Basic on every request (its
    credentials remembered, as after an app's first request)."""
    from django.db import connection
    from django.test import Client as DjangoClient
    from django.test.utils import CaptureQueriesContext

    from tests.factories import UserFactory

    user: Any = UserFactory(with_password="bench-password")
    basic = "Basic " + b64encode(f"{user.username}:bench-password".encode()).decode()
    client = DjangoClient(HTTP_AUTHORIZATION=basic)
    base = "/index.php/apps/gpoddersync"

    def queries(method: str, path: str, body: Any = None) -> int:
        with CaptureQueriesContext(connection) as captured:
            response = getattr(client, method)(
                path, data=json.dumps(body) if body else None, content_type="application/json"
            )
        assert response.status_code == 200, (path, response.status_code, response.content[:300])
        return len(captured.captured_queries)

    queries("get", f"{base}/subscriptions?since=0")  # the device is made, the password checked
    pull = queries("get", f"{base}/subscriptions?since=0")
    upload = queries("post", f"{base}/episode_action/create", [play(0, 0)])
    download = queries("get", f"{base}/episode_action?since=0")
    row(
        "queries: nextcloud incremental round",
        f"{pull} pull + {upload} upload + {download} download = {pull + upload + download}",
    )


def bench_queries() -> None:
    """SQL queries per request, at the smallest and largest batch, page and history."""
    from django.db import connection
    from django.test import Client as DjangoClient
    from django.test.utils import CaptureQueriesContext

    from accounts import authentication as auth
    from subscriptions import services
    from tests.factories import UserFactory

    user: Any = UserFactory()
    client = DjangoClient(HTTP_AUTHORIZATION=f"Bearer {token_for(user)}")
    counter = iter(range(10**9))

    def queries(method: str, path: str, body: Any = None) -> int:
        auth.active_users.add(user.pk, auth.password_mark(user.password))  # as while an app syncs
        with CaptureQueriesContext(connection) as captured:
            response = getattr(client, method)(
                path, data=json.dumps(body) if body else None, content_type="application/json"
            )
        assert response.status_code < 300, (path, response.status_code, response.content[:300])
        return len(captured.captured_queries)

    def add(n: int) -> int:
        batch = next(counter)
        entries = [{"feed_url": f"https://q.example.com/{batch}/{i}"} for i in range(n)]
        return queries("post", "/v1/subscriptions", {"subscriptions": entries})

    def with_history(changes: int) -> str:
        """A subscription whose guid changed `changes` times; its first guid."""
        batch = next(counter)
        [sub] = services.subscription_add_many(
            user=user, entries=[services.AddEntry(f"https://h.example.com/{batch}")]
        ).success
        first = current = sub.guid
        for _ in range(changes):
            new = uuid.uuid4()
            services.subscription_update(
                user=user, guid=current, change=services.SubscriptionUpdate(new_guid=new)
            )
            current = new
        return str(first)

    def one(method: str, body: Any = None) -> Callable[[int], int]:
        return lambda changes: queries(method, f"/v1/subscriptions/{with_history(changes)}", body)

    def page(query: str) -> Callable[[int], int]:
        return lambda size: queries("get", f"/v1/subscriptions?per_page={size}{query}")

    cases: list[tuple[str, Callable[[int], int], int, int, str]] = [
        ("POST /v1/subscriptions", add, 1, 500, "entries"),
        ("GET /v1/subscriptions/{guid}", one("get"), 0, 20, "guid changes"),
        (
            "PATCH /v1/subscriptions/{guid}",
            one("patch", {"is_subscribed": False}),
            0,
            20,
            "guid changes",
        ),
        ("GET /v1/subscriptions", page(""), 1, 500, "per page"),
        ("GET /v1/subscriptions?since", page("&since=2000-01-01T00:00:00Z"), 1, 500, "per page"),
        ("DELETE /v1/subscriptions/{guid}", one("delete"), 0, 20, "guid changes"),
    ]
    print("SQL queries per request")
    for name, run, small, large, unit in cases:
        few, many = run(small), run(large)
        verdict = "constant" if few == many else "GROWS"
        row(
            f"queries: {name}", f"{few} at {small} {unit}, {many} at {large}: {verdict}", "constant"
        )
    bench_gpodder_queries()
    bench_episodes_queries()
    guid = with_history(0)
    auth.forget_all()  # as a process that has not checked the user in AUTH_USER_CACHE_SECONDS
    with CaptureQueriesContext(connection) as cold:
        client.get(f"/v1/subscriptions/{guid}")
    row(
        "queries: GET /v1/subscriptions/{guid}, user not checked in the last 10 s",
        str(len(cold.captured_queries)),
    )
    deletion = client.delete(f"/v1/subscriptions/{with_history(0)}").json()["deletion_id"]
    row("queries: GET /v1/deletions/{id}", str(queries("get", f"/v1/deletions/{deletion}")))


if __name__ == "__main__":
    main()
