"""AntennaPod's sync requests one at a time beside GET one (BENCH_ONLY=sync), the device sync
events' write, a download of 100,000 actions in one answer; and bench/apps.py's load on
PostgreSQL with fsync off and with its defaults (BENCH_ONLY=apps)."""

import contextlib
import http.client
import os
import re
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import apps
from bench.episodes import insert_history
from bench.harness import (
    ROOT,
    Client,
    Gunicorn,
    add_users,
    percentile,
    row,
    running,
    token_for,
)
from tests import servers

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


def service_on(
    pg: servers.Server, database: str, redis_url: str, users: tuple[str, ...] = ("apps1", "apps4")
) -> dict[str, str]:
    """The service's environment on a new `database` of `pg`, migrated, with `users` (each with
    PASSWORD; in subprocesses: this process's Django stays on the bench's database)."""
    import psycopg

    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://postgres@{pg.host}:{pg.port}/{database}",
        "REDIS_URL": redis_url,
    }
    with psycopg.connect(f"postgresql://postgres@{pg.host}:{pg.port}/postgres") as conn:
        conn.autocommit = True
        conn.execute(f"CREATE DATABASE {database}")
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if done.returncode:
        raise RuntimeError(f"manage.py migrate failed:\n{done.stderr[-2000:]}")
    add_users(env, users, PASSWORD)
    return env
