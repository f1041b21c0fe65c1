"""`make scale`: the service at a million accounts, against the same accounts on a small
database.

On one PostgreSQL (tests/servers.py, fsync off) it loads two databases with bench/scale_data.py:
"small", 1,000 accounts over 100 feeds, and "scale", SCALE x 1,000,000 accounts over
SCALE x 100,000 feeds (10 subscriptions, 20 episode actions, 2 devices each, and the rest that
module lists). It prints each table's load time and size, its indexes' sizes, then serves both
databases at once, each with gunicorn (config/gunicorn.py, the production settings) and a
Celery worker, and times every hot request for the accounts at the start, the middle and the
end of the tables, one request at a time on a kept-alive connection as `make bench` does,
alternating between the two databases so that the machine's load weighs on both alike. Each
p50 at scale is compared with the same account's on the small database: within 1.5x is the
target. Last, it runs each of those requests, the admin's list pages, its overview and a user's
page, and the sweeps in-process against the large database, asks PostgreSQL for the plan of every
statement they sent, prints the scans, and writes the plans to bench/out/scale-plans.txt: no
sequential scan of a loaded table is the target. Exits non-zero on a missed target.
"""

import contextlib
import http.client
import os
import re
import sys
import tempfile
import time
from base64 import b64encode
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import scale_data as data
from bench.run import (
    OUT,
    Client,
    GpodderSession,
    Gunicorn,
    django_on,
    percentile,
    running,
    signed_in_cookie,
    token_for,
)
from tests import servers

SCALE = float(os.environ.get("SCALE", "1"))
BIG = data.Shape(accounts=int(1_000_000 * SCALE), feeds=max(100, int(100_000 * SCALE)))
SMALL = data.Shape(accounts=1_000, feeds=100)
SAMPLES = int(os.environ.get("SCALE_SAMPLES", "30"))  # per request kind and account
LOAD_TARGET = 30 * 60  # seconds, for the whole load of the large database
RATIO_TARGET = 1.5
# PostgreSQL for a data set larger than its default 128 MB of shared buffers; the same server
# holds both databases, so the comparison is of the data's size alone.
TUNING = {
    "shared_buffers": "2GB",
    "maintenance_work_mem": "1GB",
    "max_wal_size": "8GB",
    "checkpoint_timeout": "30min",
    "effective_cache_size": "8GB",
}
PLANS = OUT / "scale-plans.txt"
# The admin's pages end at the 10,000th row (core.admin.EstimatedCountPaginator.COUNT_CAP): an
# OFFSET past that walks every row before it.
OFFSET_CAP = 10_000


def tuned(pg: servers.Server) -> None:
    import psycopg

    with psycopg.connect(f"postgresql://postgres@{pg.host}:{pg.port}/postgres") as conn:
        conn.autocommit = True
        for name, value in TUNING.items():
            conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
    servers.postgres_stop(pg)
    servers.postgres_start(pg)


def dsn(pg: servers.Server, database: str) -> str:
    return f"postgresql://postgres@{pg.host}:{pg.port}/{database}"


@contextlib.contextmanager
def on_database(name: str) -> Iterator[None]:
    """This process's Django connection on database `name` for a while (the same server)."""
    from django.db import connection

    before = connection.settings_dict["NAME"]
    connection.close()
    connection.settings_dict["NAME"] = name
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict["NAME"] = before


def loaded(pg: servers.Server, database: str, shape: data.Shape) -> float:
    """Create, migrate and fill `database`; print what it took and holds; return the seconds."""
    import psycopg
    from django.core.management import call_command

    with psycopg.connect(dsn(pg, "postgres"), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {database}")
    with on_database(database):
        call_command("migrate", verbosity=0)
    rows = sum(shape.rows().values())
    print(f"\n{database}: {shape.accounts:,} accounts, {shape.feeds:,} feeds, {rows:,} rows")
    start = time.monotonic()
    tables = data.load(dsn(pg, database), shape)
    took = time.monotonic() - start
    print(f"{database}: loaded in {took:.0f} s")
    total = 0
    print(f"  {'table / index':<58} {'rows':>12} {'seconds':>8} {'MB':>9}")
    by_table = {t.table: t for t in tables}
    for table, index, size in data.sizes(dsn(pg, database)):
        total += size
        if not index:
            t = by_table[table]
            print(f"  {table:<58} {t.rows:>12,} {t.seconds:>8.0f} {size / 2**20:>9,.0f}")
        else:
            print(f"    {index:<56} {'':>12} {'':>8} {size / 2**20:>9,.0f}")
    print(f"  {'all loaded tables and their indexes':<58} {'':>12} {'':>8} {total / 2**20:>9,.0f}")
    return took


# --- timing the hot requests -------------------------------------------------------------


T = TypeVar("T")


def again_if_closed(conn: http.client.HTTPConnection, request: Callable[[], T]) -> T:
    """`request()`, sent once more on a new connection when the server had closed the kept-alive
    one (gunicorn closes one idle for 5 s), as an app does: such a request was never read."""
    try:
        return request()
    except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
        conn.close()
        return request()


class Account:
    """One account's apps on one database's gunicorn: a /v1/ client, a gpodder app (cookie
    after its first request, as gPodder and AntennaPod do), and a signed-in browser."""

    def __init__(self, port: int, number: int, database: str, shape: data.Shape):
        self.port, self.number, self.database, self.shape = port, number, database, shape
        from django.contrib.auth import get_user_model

        with on_database(database):
            user = get_user_model().objects.get(pk=number)
            self.api = Client(port, token_for(user))
            self.cookie = signed_in_cookie(user)
        self.gpodder = GpodderSession(port, data.username(number), data.PASSWORD)
        self.pages = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        self.name = data.username(number)
        self.n = 0
        self.added: list[str] = []
        self.deleting: list[float] = []  # seconds from each DELETE to its SUCCESS

    def reconnect(self) -> None:
        """New connections, as an app opens after a pause: gunicorn closes one idle for its
        keep-alive time, which the other accounts' turns can outlast."""
        for conn in (self.api.conn, self.gpodder.conn, self.pages):
            conn.close()  # http.client connects again on the next request

    def api_call(self, method: str, path: str, body: Any = None) -> tuple[int, Any, float]:
        return again_if_closed(self.api.conn, lambda: self.api.call(method, path, body))

    def api_ms(self, method: str, path: str, body: Any = None, expect: int = 200) -> float:
        status, answer, seconds = self.api_call(method, path, body)
        if status != expect:
            raise RuntimeError(f"{method} {path} on {self.database} answered {status}: {answer}")
        return seconds * 1000

    def page_ms(self, path: str) -> float:
        def get() -> float:
            start = time.perf_counter()
            self.pages.request("GET", path, headers=dict([self.cookie.split(": ", 1)]))
            response = self.pages.getresponse()
            response.read()
            if response.status != 200:
                raise RuntimeError(f"GET {path} on {self.database} answered {response.status}")
            return (time.perf_counter() - start) * 1000

        return again_if_closed(self.pages, get)

    def gpodder_ms(self, method: str, path: str, body: Any = None) -> float:
        call = self.gpodder.call
        return again_if_closed(self.gpodder.conn, lambda: call(method, path, body))[1] * 1000

    # The requests, each answering its time in ms.

    def get_one(self) -> float:
        return self.api_ms("GET", f"/v1/subscriptions/{data.subscription_guid(self.number, 2)}")

    def list_since(self) -> float:
        since = (data.T0 + timedelta(seconds=data.joined(self.number) + 3600)).isoformat()
        since = since.replace("+00:00", "Z")
        return self.api_ms("GET", f"/v1/subscriptions?since={since}&per_page=50")

    def gpodder_pull(self) -> float:
        since = int((data.T0 + timedelta(seconds=data.joined(self.number) + 3600)).timestamp())
        return self.gpodder_ms("GET", f"/api/2/subscriptions/{self.name}/phone.json?since={since}")

    def episodes_since(self) -> float:
        at = data.T0 + timedelta(seconds=data.action_received(self.number, 14))
        path = f"/api/2/episodes/{self.name}.json?since={int(at.timestamp())}"
        return self.gpodder_ms("GET", path)

    def podcasts_page(self) -> float:
        return self.page_ms("/podcasts/")

    def history_page(self) -> float:
        return self.page_ms("/history/")

    def add(self) -> float:
        self.n += 1
        url = f"https://added.example.net/{self.number}/{self.n}.xml"
        status, answer, seconds = self.api_call(
            "POST", "/v1/subscriptions", {"subscriptions": [{"feed_url": url}]}
        )
        if status != 200 or not answer["success"]:
            raise RuntimeError(f"an add on {self.database} answered {status}: {answer}")
        self.added.append(answer["success"][0]["guid"])
        return seconds * 1000

    def patch(self) -> float:
        self.n += 1
        guid = data.subscription_guid(self.number, 3)
        return self.api_ms("PATCH", f"/v1/subscriptions/{guid}", {"is_subscribed": self.n % 2 == 0})

    def gpodder_upload(self) -> float:
        self.n += 1
        url = f"https://uploaded.example.net/{self.number}/{self.n}.xml"
        path = f"/api/2/subscriptions/{self.name}/phone.json"
        return self.gpodder_ms("POST", path, {"add": [url], "remove": []})

    def episode_upload(self) -> float:
        self.n += 1
        feed = self.shape.feed_of(self.number, 4)
        action = {"podcast": data.feed_url(feed), "episode": data.episode_url(feed, 3),
                  "action": "play", "started": 0, "position": self.n, "total": 1800,
                  "timestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S"),
                  "device": "phone"}  # fmt: skip
        return self.gpodder_ms("POST", f"/api/2/episodes/{self.name}.json", [action])

    def delete(self) -> float:
        """DELETE one added subscription: the 202's time; the time to SUCCESS, polled by the
        app as the API says, goes to `deleting`."""
        guid = self.added.pop()
        start = time.perf_counter()
        status, answer, seconds = self.api_call("DELETE", f"/v1/subscriptions/{guid}")
        if status != 202:
            raise RuntimeError(f"a DELETE on {self.database} answered {status}: {answer}")
        deadline = time.monotonic() + 60
        while True:
            _, state, _ = self.api_call("GET", f"/v1/deletions/{answer['deletion_id']}")
            if state["status"] == "SUCCESS":
                break
            if state["status"] != "PENDING" or time.monotonic() > deadline:
                raise RuntimeError(f"deletion on {self.database} ended {state}")
            time.sleep(0.002)
        self.deleting.append((time.perf_counter() - start) * 1000)
        return seconds * 1000


KINDS: list[tuple[str, Callable[[Account], float]]] = [
    ("GET one (/v1/)", Account.get_one),
    ("a page of the list with since (/v1/)", Account.list_since),
    ("gpodder subscription pull since", Account.gpodder_pull),
    ("episode download since (gpodder)", Account.episodes_since),
    ("podcasts page", Account.podcasts_page),
    ("history page", Account.history_page),
    ("add one (/v1/)", Account.add),
    ("PATCH (/v1/)", Account.patch),
    ("gpodder subscription upload", Account.gpodder_upload),
    ("episode upload (gpodder)", Account.episode_upload),
    ("DELETE (/v1/), the 202", Account.delete),
]


def database_cpu(pg: servers.Server, database: str) -> dict[int, float]:
    """CPU seconds used so far by each PostgreSQL backend connected to `database` (the web
    processes' and the worker's kept connections), by pid: what its requests cost the database.
    """
    with psycopg.connect(dsn(pg, "postgres")) as conn:
        pids = [pid for (pid,) in conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s", [database])]  # fmt: skip
    tick = os.sysconf("SC_CLK_TCK")
    used = {}
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue  # ended meanwhile
        fields = stat[stat.rindex(")") + 2 :].split()
        used[pid] = (int(fields[11]) + int(fields[12])) / tick
    return used


def cpu_between(before: dict[int, float], after: dict[int, float]) -> float | None:
    """CPU seconds spent between the two readings; None when a backend ended in between (its
    share is unknown): the runs keep their connections (CONN_MAX_AGE) so that none does."""
    if set(before) - set(after):
        return None
    return sum(used - before.get(pid, 0.0) for pid, used in after.items())


def positions(shape: data.Shape) -> list[tuple[str, int]]:
    return [("start", 1), ("middle", shape.accounts // 2), ("end", shape.accounts)]


def timed(
    pg: servers.Server, small_port: int, big_port: int
) -> tuple[list[tuple[str, str, float, float]], dict[str, float | None]]:
    """(request, position, p50 small, p50 at scale) for every request and position; and the
    CPU time PostgreSQL spent per request of each kind at scale, in ms."""
    accounts = {}
    for (where, small_n), (_, big_n) in zip(positions(SMALL), positions(BIG), strict=True):
        accounts[where] = (
            Account(small_port, small_n, "opa_small", SMALL),
            Account(big_port, big_n, "opa_scale", BIG),
        )
    results = []
    cpu: dict[str, float | None] = {}
    for label, request in KINDS:
        before = database_cpu(pg, "opa_scale")
        for where, pair in accounts.items():
            took: tuple[list[float], list[float]] = ([], [])
            for one in pair:  # the first of each: a connection, a login, a cold cache
                one.reconnect()
                if request is Account.delete:
                    one.add()
                request(one)
            for _ in range(SAMPLES):
                for side, one in enumerate(pair):
                    if request is Account.delete:
                        one.add()
                    took[side].append(request(one))
            results.append((label, where, percentile(took[0], 0.5), percentile(took[1], 0.5)))
        spent = cpu_between(before, database_cpu(pg, "opa_scale"))
        cpu[label] = None if spent is None else spent * 1000 / (3 * (SAMPLES + 1))
    for where, pair in accounts.items():
        samples = [one.deleting[1:] for one in pair]
        results.append(
            ("DELETE -> SUCCESS through the worker", where,
             percentile(samples[0], 0.5), percentile(samples[1], 0.5))
        )  # fmt: skip
    return results, cpu


# --- the plans -----------------------------------------------------------------------------

SCAN_NODES = ("Seq Scan", "Index Scan", "Index Only Scan", "Bitmap Heap Scan")
# Nodes that read all of their input before they give a row: a LIMIT above them stops nothing.
BLOCKING = ("Sort", "Incremental Sort", "Hash", "Aggregate", "Materialize", "SetOp")


def scans(plan: dict[str, Any], limited: bool = False) -> Iterator[tuple[str, str, str, bool]]:
    """(node type, relation, index, reads the whole table) of every scan in a JSON plan.

    A scan reads the whole table when it is sequential, or an index scan with no condition
    (the whole index in its order) unless a LIMIT above it stops it after a few rows, with no
    filter to skip rows on the way: a list's newest 100 by the primary key."""
    kind = plan.get("Node Type", "")
    if kind == "Limit":
        limited = True
    elif kind in BLOCKING:
        limited = False
    if kind in SCAN_NODES:
        index = plan.get("Index Name", "")
        if kind == "Bitmap Heap Scan":
            index = ", ".join(
                p.get("Index Name", "") for p in plan.get("Plans", []) if "Index Name" in p
            )
        unbounded = not limited or "Filter" in plan
        whole = kind == "Seq Scan" or (
            kind != "Bitmap Heap Scan" and "Index Cond" not in plan and unbounded
        )
        yield kind, plan.get("Relation Name", ""), index, whole
    for child in plan.get("Plans", []):
        yield from scans(child, limited)


def explained(
    conn: Any, statements: list[str], out: Any, label: str
) -> tuple[list[str], list[str]]:
    """EXPLAIN each statement (without running it); return the scans of loaded tables as text,
    and those that read a whole loaded table."""
    big = {table for table, _, _ in data.TABLES}
    # A partial index holds only its rows (the pending deletions, say): reading all of it is
    # reading those.
    partial = {
        name for (name,) in conn.execute(
            "SELECT indexrelid::regclass::text FROM pg_index WHERE indpred IS NOT NULL"
        )
    }  # fmt: skip
    seen: list[str] = []
    bad: list[str] = []
    for sql in statements:
        if not re.match(r"\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b", sql, re.I):
            continue
        offset = re.search(r"\bOFFSET (\d+)", sql)
        if offset and int(offset[1]) > OFFSET_CAP:
            bad.append(f"{label}: OFFSET {offset[1]} walks past every row before it")
        plan = conn.execute("EXPLAIN (FORMAT JSON) " + sql).fetchone()[0][0]["Plan"]
        text = "\n".join(r[0] for r in conn.execute("EXPLAIN " + sql).fetchall())
        out.write(f"--- {label}\n{sql}\n{text}\n\n")
        for node, relation, index, whole in scans(plan):
            if relation not in big:
                continue
            short = f"{node} {index or ''} on {relation}".replace("  ", " ")
            if short not in seen:
                seen.append(short)
            if whole and index not in partial:
                bad.append(f"{label}: {short} reads the whole table")
    return seen, bad


def plans(pg: servers.Server) -> list[str]:
    """Run every hot request, the admin's list pages and the sweeps in-process on the large
    database for its middle account; print their scans; return the sequential scans of loaded
    tables."""
    import psycopg
    from django.conf import settings
    from django.contrib import admin
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client as DjangoClient
    from django.urls import reverse

    from accounts.services import refresh_token_for
    from deletions.services import (
        account_deletion_process,
        account_deletion_request,
        deletion_sweep,
    )

    number = BIG.accounts // 2
    name = data.username(number)
    print(f"\nplans on the large database, for account {number:,} (the middle one)")
    bad: list[str] = []
    with (
        on_database("opa_scale"),
        PLANS.open("w") as out,
        psycopg.connect(dsn(pg, "opa_scale"), autocommit=True) as explain,
    ):
        user = get_user_model().objects.get(pk=number)
        token = token_for(user)
        refresh = str(refresh_token_for(user))
        cookie = signed_in_cookie(user).split("=", 1)[1]
        staff, _ = get_user_model().objects.get_or_create(
            username="scale-admin", defaults={"is_staff": True, "is_superuser": True}
        )
        basic = "Basic " + b64encode(f"{name}:{data.PASSWORD}".encode()).decode()
        api = DjangoClient(HTTP_AUTHORIZATION=f"Bearer {token}")
        app = DjangoClient(HTTP_AUTHORIZATION=basic)
        app.get(f"/api/2/subscriptions/{name}/phone.json?since=0")  # the session cookie
        browser = DjangoClient()
        browser.cookies[settings.SESSION_COOKIE_NAME] = cookie
        staff_browser = DjangoClient()
        staff_browser.force_login(staff)
        # A subscription of this run's own, to GET, PATCH and DELETE (with SCALE_KEEP, the
        # account's own were changed by earlier runs).
        added = api.post("/v1/subscriptions",
                         {"subscriptions": [{"feed_url": f"https://plan.example.net/{time.time_ns()}"}]},
                         content_type="application/json").json()  # fmt: skip
        guid = added["success"][0]["guid"]
        podcast = data.subscription_guid(number, 4)
        feed = BIG.feed_of(number, 4)
        pulled = int((data.T0 + timedelta(seconds=data.joined(number) + 3600)).timestamp())
        episodes_since = int(
            (data.T0 + timedelta(seconds=data.action_received(number, 14))).timestamp()
        )
        since = (data.T0 + timedelta(seconds=data.joined(number) + 3600)).isoformat()
        requests: list[tuple[str, Callable[[], Any]]] = [
            ("GET one", lambda: api.get(f"/v1/subscriptions/{guid}")),
            ("list since", lambda: api.get(
                "/v1/subscriptions", {"since": since, "per_page": "50"})),
            ("add", lambda: api.post(
                "/v1/subscriptions", {"subscriptions": [{"feed_url": f"https://plan.example.net/a{time.time_ns()}"}]},
                content_type="application/json")),
            ("PATCH", lambda: api.patch(
                f"/v1/subscriptions/{guid}", {"is_subscribed": False},
                content_type="application/json")),
            ("DELETE", lambda: api.delete(f"/v1/subscriptions/{guid}")),
            ("gpodder pull", lambda: app.get(
                f"/api/2/subscriptions/{name}/phone.json", {"since": pulled})),
            ("gpodder upload", lambda: app.post(
                f"/api/2/subscriptions/{name}/phone.json",
                {"add": ["https://plan.example.net/b"], "remove": []},
                content_type="application/json")),
            ("episode upload", lambda: app.post(
                f"/api/2/episodes/{name}.json",
                [{"podcast": data.feed_url(feed), "episode": data.episode_url(feed, 2),
                  "action": "download", "device": "phone"}],
                content_type="application/json")),
            ("episode download since", lambda: app.get(
                f"/api/2/episodes/{name}.json", {"since": episodes_since})),
            ("Nextcloud subscriptions", lambda: app.get(
                "/index.php/apps/gpoddersync/subscriptions", {"since": pulled})),
            ("Nextcloud episode actions", lambda: app.get(
                "/index.php/apps/gpoddersync/episode_action", {"since": episodes_since})),
            ("podcasts page", lambda: browser.get("/podcasts/")),
            ("podcast page", lambda: browser.get(f"/podcasts/{podcast}/")),
            ("history page", lambda: browser.get("/history/")),
            ("devices page", lambda: browser.get("/devices/")),
        ]  # fmt: skip

        def staff_get(url: str, query: dict[str, Any] | None = None) -> Callable[[], Any]:
            return lambda: staff_browser.get(url, query or {})

        for model in admin.site._registry:
            url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
            requests.append((f"admin list {model._meta.label}", staff_get(url)))
            requests.append((f"admin search {model._meta.label}, a username",
                             staff_get(url, {"q": name})))  # fmt: skip
        requests += [
            ("admin search auth.User, an email", lambda: staff_browser.get(
                reverse("admin:auth_user_changelist"), {"q": f"{name}@EXAMPLE.net"})),
            ("admin search subscriptions, a feed URL", lambda: staff_browser.get(
                reverse("admin:subscriptions_subscription_changelist"),
                {"q": data.feed_url(feed).upper().replace("HTTPS://", "https://")})),
            ("admin search feed checks, a feed URL", lambda: staff_browser.get(
                reverse("admin:feedchecks_feedcheck_changelist"), {"q": data.feed_url(feed)})),
            ("admin search feed episodes, a feed URL", lambda: staff_browser.get(
                reverse("admin:feedchecks_feedepisode_changelist"), {"q": data.feed_url(feed)})),
            ("admin filter deletions, pending", lambda: staff_browser.get(
                reverse("admin:deletions_deletion_changelist"), {"status__exact": "PENDING"})),
            ("admin list subscriptions, of a user", lambda: staff_browser.get(
                reverse("admin:subscriptions_subscription_changelist"),
                {"user__id__exact": number})),
            ("admin list subscriptions, its last page", lambda: staff_browser.get(
                reverse("admin:subscriptions_subscription_changelist"), {"p": 100})),
            ("admin overview", staff_get(reverse("admin-overview"))),
            ("admin user page, its links' counts", staff_get(
                reverse("admin:auth_user_change", args=[number]))),
            ("/v1/ login", lambda: DjangoClient().post(
                "/v1/auth/login", {"username": name, "password": data.PASSWORD},
                content_type="application/json")),
            ("/v1/ token refresh", lambda: DjangoClient().post(
                "/v1/auth/refresh", {"refresh_token": refresh}, content_type="application/json")),
            ("the JSON export", lambda: b"".join(browser.get("/data/everything.json"))),
            ("an account's deletion, in the worker", lambda: account_deletion_process(
                deletion_id=account_deletion_request(user=get_user_model().objects.filter(
                    pk__lt=BIG.accounts).order_by("-pk").first()).pk)),
            ("sweep: deletions", lambda: deletion_sweep()),
            ("sweep: clearsessions", lambda: call_command("clearsessions")),
        ]  # fmt: skip
        sent: list[str] = []

        def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
            """Keep each statement as PostgreSQL can plan it alone: its parameters in place."""
            one = params[0] if many and params else params
            sent.append(psycopg.ClientCursor(explain).mogrify(sql, one) if one else sql)
            return execute(sql, params, many, context)

        for label, request in requests:
            sent.clear()
            with connection.execute_wrapper(record):
                answer = request()
            status = getattr(answer, "status_code", None)
            if status is not None and (status >= 400 or answer.get("Location", "").endswith("e=1")):
                raise RuntimeError(f"{label} answered {status}: {answer.content[:300]!r}")
            seen, wrong = explained(explain, sent, out, label)
            bad += wrong
            print(f"  {label:<40} {len(sent):>2} statements: " + "; ".join(seen or ["-"]))
    print(f"  the plans: {PLANS}")
    return bad


# --- the run -------------------------------------------------------------------------------


def ratios(results: list[tuple[str, str, float, float]], cpu: dict[str, float | None]) -> int:
    """Print the p50s against their target, and PostgreSQL's CPU per request; return how many
    p50s missed it."""
    missed = 0
    print(f"\n| request | account | small ({SMALL.accounts:,}) | at scale ({BIG.accounts:,}) "
          "| ratio | target |\n|---|---|---|---|---|---|")  # fmt: skip
    for label, where, small, big in results:
        ratio = big / small
        met = ratio <= RATIO_TARGET
        missed += not met
        print(f"| {label} | {where} | {small:.2f} ms | {big:.2f} ms | {ratio:.2f} | "
              f"<= {RATIO_TARGET}: {'met' if met else 'MISSED'} |")  # fmt: skip
    print("\n| request | PostgreSQL CPU per request at scale |\n|---|---|")
    for label, ms in cpu.items():
        print(f"| {label} | {'a backend ended: unknown' if ms is None else f'{ms:.2f} ms'} |")
    return missed


def main() -> int:
    OUT.mkdir(exist_ok=True)
    logs = Path(tempfile.mkdtemp(prefix="opa-scale-"))
    # SCALE_KEEP=<folder>: keep the loaded server there, and time and plan it again on the next
    # run without loading it again (its accounts then carry the earlier runs' writes).
    keep = Path(os.environ["SCALE_KEEP"]) if os.environ.get("SCALE_KEEP") else None
    marker = keep / "loaded-in-seconds" if keep else None
    # The marker names the scale loaded: another, or none (a load cut short), loads afresh.
    kept = marker is not None and marker.exists() and marker.read_text().split()[0] == str(SCALE)
    with servers.postgres(folder=keep) as pg, servers.redis() as redis_server:
        tuned(pg)
        with psycopg.connect(dsn(pg, "postgres"), autocommit=True) as conn:
            for name in ("opa_plain",) if kept else ("opa_plain", "opa_small", "opa_scale"):
                conn.execute(f"DROP DATABASE IF EXISTS {name}")
        env = django_on(pg, redis_server, "opa_plain")
        print(f"make scale: PostgreSQL {', '.join(f'{k}={v}' for k, v in TUNING.items())}")
        if kept:
            assert marker is not None
            took = float(marker.read_text().split()[1])
            print(f"the databases of {keep}, loaded earlier in {took:.0f} s")
        else:
            loaded(pg, "opa_small", SMALL)
            took = loaded(pg, "opa_scale", BIG)
            if marker is not None:
                marker.write_text(f"{SCALE} {took:.0f}")
        # Each database's processes on their own Redis databases (broker 1 and 3, caches 2 and
        # 4): a worker must never take the other database's task.
        base = redis_server.url.rsplit("/", 1)[0]
        environments = {
            name: {**env, "DATABASE_URL": dsn(pg, name).replace("postgresql", "postgres", 1),
                   "REDIS_URL": f"{base}/{n}", "CONN_MAX_AGE": "3600"}
            for name, n in (("opa_small", 1), ("opa_scale", 3))
        }  # fmt: skip
        small_app = Gunicorn("config.wsgi", environments["opa_small"], logs / "small.log")
        big_app = Gunicorn("config.wsgi", environments["opa_scale"], logs / "scale.log")
        small_worker = servers.Worker(environments["opa_small"], logs / "small-worker.log")
        big_worker = servers.Worker(environments["opa_scale"], logs / "scale-worker.log")
        with running(small_app, big_app, small_worker, big_worker):
            small_app.start()
            big_app.start()
            # Deletions only: the adds' feed checks (of feeds that do not exist) would queue the
            # deletions behind them, as docs/operations.md says a deployment must not.
            small_worker.start(queues="celery,deletions")
            big_worker.start(queues="celery,deletions")
            print(f"\np50 of {SAMPLES} requests each, one at a time, both databases in turn")
            results, cpu = timed(pg, small_app.port, big_app.port)
        missed = ratios(results, cpu)  # printed before the plans, which take a while
        bad_plans = plans(pg)
    print("\n| figure | measured | | | | target |\n|---|---|---|---|---|---|")
    print(f"| load of {BIG.accounts:,} accounts | | | {took:.0f} s | | <= {LOAD_TARGET} s: "
          f"{'met' if took <= LOAD_TARGET else 'MISSED'} |")  # fmt: skip
    print(f"| sequential scans of a loaded table | | | {len(bad_plans)} | | 0: "
          f"{'met' if not bad_plans else 'MISSED'} |")  # fmt: skip
    for line in bad_plans:
        print(f"  sequential scan: {line}")
    return 1 if missed or bad_plans or took > LOAD_TARGET else 0


if __name__ == "__main__":
    sys.exit(main())
