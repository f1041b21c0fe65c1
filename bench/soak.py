"""`make soak`: every endpoint under a steady mix of apps for SOAK_SECONDS (900), with the
database restarted a third of the way in and Redis two thirds of the way, on loopback only.

It prints, for each period (before, during and after each outage), the requests, the answers by
status and the p50/p99; the web workers' RSS; and then checks that every write the service
acknowledged is there: each add answered 200, each deletion answered 202 (ended, and its
subscription deleted when it succeeded), each episode upload answered 200. It exits non-zero on
a 500, a lost write or a deletion left PENDING.
"""

import http.client
import itertools
import json
import os
import random
import sys
import tempfile
import threading
import time
from base64 import b64encode
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import Gunicorn, django_on, percentile, running
from tests import servers

SECONDS = float(os.environ.get("SOAK_SECONDS", "900"))
CLIENTS = int(os.environ.get("SOAK_CLIENTS", "8"))
OUTAGE = float(os.environ.get("SOAK_OUTAGE_SECONDS", "5"))
PASSWORD = "soak-password-long-enough"
# Deletions still pending after the load may take this long to end (the sweep's defaults).
SETTLE = 180


@dataclass
class Ledger:
    """What the service answered, and the writes it acknowledged."""

    answers: list[tuple[float, str, int, float]] = field(default_factory=list)
    added: list[tuple[int, str]] = field(default_factory=list)  # (user id, feed URL)
    deleted: list[tuple[int, int]] = field(default_factory=list)  # (user id, deletion id)
    episodes: list[tuple[int, str]] = field(default_factory=list)  # (user id, episode URL)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, kind: str, status: int, seconds: float) -> None:
        with self.lock:
            self.answers.append((time.monotonic(), kind, status, seconds))


class App:
    """One app of one user: a kept-alive connection, a token (/v1/) and Basic (gpodder)."""

    def __init__(self, port: int, user: Any, ledger: Ledger, rng: random.Random):
        self.port, self.user, self.ledger, self.rng = port, user, ledger, rng
        self.conn: http.client.HTTPConnection | None = None
        self.token = ""
        self.basic = "Basic " + b64encode(f"{user.username}:{PASSWORD}".encode()).decode()
        self.guids: list[str] = []
        self.n = 0

    def call(
        self, kind: str, method: str, path: str, body: Any = None, basic: bool = False
    ) -> tuple[int, Any]:
        headers = {"Content-Type": "application/json"}
        headers["Authorization"] = self.basic if basic else f"Bearer {self.token}"
        data = None if body is None else json.dumps(body)
        start = time.perf_counter()
        try:
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            self.conn.request(method, path, data, headers)
            response = self.conn.getresponse()
            payload = response.read()
            status = response.status
            if response.getheader("Connection", "").lower() == "close":
                self.conn.close()
                self.conn = None
        except OSError:
            if self.conn is not None:
                self.conn.close()
            self.conn, status, payload = None, 0, b""  # no answer: a failure of its own
        self.ledger.answer(kind, status, time.perf_counter() - start)
        try:
            return status, json.loads(payload) if payload else None
        except ValueError:
            return status, None

    def login(self) -> None:
        body = {"username": self.user.username, "password": PASSWORD}
        status, answer = self.call("login", "POST", "/v1/auth/login", body)
        if status == 200:
            self.token = answer["access_token"]

    def step(self) -> None:
        if not self.token:
            self.login()
            return
        self.n += 1
        roll = self.rng.random()
        uid = self.user.pk
        if roll < 0.15:
            urls = [f"https://soak.example.com/{uid}/{self.n}/{i}.xml" for i in range(3)]
            body = {"subscriptions": [{"feed_url": url} for url in urls]}
            status, answer = self.call("add", "POST", "/v1/subscriptions", body)
            if status == 200:
                with self.ledger.lock:
                    self.ledger.added += [(uid, s["feed_url"]) for s in answer["success"]]
                self.guids += [s["guid"] for s in answer["success"]]
        elif roll < 0.40 and self.guids:
            self.call("get one", "GET", f"/v1/subscriptions/{self.rng.choice(self.guids)}")
        elif roll < 0.55:
            self.call("list", "GET", "/v1/subscriptions?per_page=50")
        elif roll < 0.62 and self.guids:
            change = {"is_subscribed": self.rng.random() < 0.5}
            self.call("patch", "PATCH", f"/v1/subscriptions/{self.rng.choice(self.guids)}", change)
        elif roll < 0.67 and self.guids:
            guid = self.guids.pop(self.rng.randrange(len(self.guids)))
            status, answer = self.call("delete", "DELETE", f"/v1/subscriptions/{guid}")
            if status == 202:
                with self.ledger.lock:
                    self.ledger.deleted.append((uid, answer["deletion_id"]))
        elif roll < 0.77:
            name = self.user.username
            self.call(
                "gpodder pull", "GET", f"/api/2/subscriptions/{name}/soak.json?since=0", basic=True
            )
        elif roll < 0.87:
            episode = f"https://soak.example.com/ep/{uid}/{self.n}.mp3"
            action = {"podcast": f"https://soak-pods.example.com/{uid}", "episode": episode,
                      "action": "play", "position": self.n, "device": "soak"}  # fmt: skip
            path = f"/api/2/episodes/{self.user.username}.json"
            status, _ = self.call("episode upload", "POST", path, [action], basic=True)
            if status == 200:
                with self.ledger.lock:
                    self.ledger.episodes.append((uid, episode))
        else:
            path = f"/api/2/episodes/{self.user.username}.json?since={int(time.time()) - 60}"
            self.call("episode download", "GET", path, basic=True)


def summary(ledger: Ledger, marks: list[tuple[str, float]], end: float) -> int:
    """Print each period's figures; return the number of 500s and unanswered requests."""
    bad = 0
    bounds = [*marks, ("end", end)]
    for (name, start), (_, stop) in itertools.pairwise(bounds):
        rows = [a for a in ledger.answers if start <= a[0] < stop]
        if not rows:
            continue
        statuses = Counter(status for _, _, status, _ in rows)
        times = [seconds * 1000 for _, _, _, seconds in rows]
        bad += statuses.get(500, 0) + statuses.get(0, 0)
        by_status = ", ".join(f"{s or 'no answer'}: {n}" for s, n in sorted(statuses.items()))
        print(
            f"  {name:<24} {stop - start:6.1f} s {len(rows):7d} requests  "
            f"p50 {percentile(times, 0.5):6.2f} ms  p99 {percentile(times, 0.99):7.2f} ms  "
            f"[{by_status}]",
            flush=True,
        )
        if name.startswith("after"):
            served = [at for at, _, status, _ in rows if 200 <= status < 300]
            if served:
                back = served[0] - start
                print(f"  {'':<24} first request served {back:.2f} s after the restart")
    return bad


def verify(ledger: Ledger) -> int:
    """Every acknowledged write is there; return how many are not."""
    from deletions.models import Deletion
    from episodes.models import EpisodeAction
    from subscriptions.models import Subscription

    missing = 0
    by_user: dict[int, set[str]] = defaultdict(set)
    for uid, url in ledger.added:
        by_user[uid].add(url)
    for uid, urls in by_user.items():
        found = set(Subscription.objects.filter(user_id=uid).values_list("feed_url", flat=True))
        missing += len(urls - found)
    print(f"  adds acknowledged: {len(ledger.added)}, missing: {missing}")

    ids = [deletion_id for _, deletion_id in ledger.deleted]
    deadline = time.monotonic() + SETTLE
    while Deletion.objects.filter(pk__in=ids, status="PENDING").exists():
        if time.monotonic() > deadline:
            break
        time.sleep(2)
    statuses = Counter(Deletion.objects.filter(pk__in=ids).values_list("status", flat=True))
    lost = len(ids) - sum(statuses.values())
    pending = statuses.get("PENDING", 0)
    undeleted = Deletion.objects.filter(
        pk__in=ids, status="SUCCESS", subscription__deleted__isnull=True
    ).count()
    print(f"  deletions acknowledged: {len(ids)}, {dict(statuses)}, rows lost: {lost}, "
          f"succeeded but not deleted: {undeleted}")  # fmt: skip

    episodes = {episode for _, episode in ledger.episodes}
    stored = set(
        EpisodeAction.objects.filter(episode__in=episodes).values_list("episode", flat=True)
    )
    print(f"  episode actions acknowledged: {len(episodes)}, missing: {len(episodes - stored)}")
    return missing + lost + pending + undeleted + len(episodes - stored)


def main() -> int:
    logs = Path(tempfile.mkdtemp(prefix="opa-soak-"))
    with servers.postgres() as pg, servers.redis() as redis_server:
        env = django_on(pg, redis_server, "opa_soak", THROTTLE_LOGIN_RATE="100000/min")
        from django.db import connection

        from tests.factories import UserFactory

        users = [UserFactory(with_password=PASSWORD) for _ in range(CLIENTS)]
        connection.close()
        app = Gunicorn("config.wsgi", env, logs / "app.log")
        worker = servers.Worker(env, logs / "worker.log")
        with running(app, worker):
            app.start()
            worker.start()
            rss = [("start", app.rss_mb())]
            ledger, stop = Ledger(), threading.Event()

            def client(n: int) -> None:
                one = App(app.port, users[n], ledger, random.Random(n))
                while not stop.is_set():
                    one.step()
                    if ledger.answers and ledger.answers[-1][2] in (0, 503):
                        time.sleep(0.05)  # as a client honouring Retry-After would, briefly

            restarts: list[float] = []

            def supervise() -> None:
                """As systemd's Restart=always would: Celery's worker can exit when it loses
                Redis mid-acknowledgement (kombu's "Unrecoverable error"), docs/operations.md."""
                while not stop.is_set():
                    if worker.process is not None and worker.process.poll() is not None:
                        restarts.append(time.monotonic())
                        print(f"  worker exited ({worker.process.returncode}); started again")
                        worker.start()
                    time.sleep(0.5)

            threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
            threads.append(threading.Thread(target=supervise))
            begin = time.monotonic()
            marks = [("before", begin)]
            for thread in threads:
                thread.start()
            print(f"soak: {SECONDS:.0f} s, {CLIENTS} apps, gunicorn on :{app.port}", flush=True)
            time.sleep(SECONDS / 3)
            rss.append(("before the database restart", app.rss_mb()))
            marks.append(("database down", time.monotonic()))
            servers.postgres_stop(pg)
            time.sleep(OUTAGE)
            servers.postgres_start(pg)
            marks.append(("after the database", time.monotonic()))
            time.sleep(max(0.0, begin + 2 * SECONDS / 3 - time.monotonic()))
            marks.append(("redis down", time.monotonic()))
            redis_server.stop()
            time.sleep(OUTAGE)
            redis_server.start()
            marks.append(("after redis", time.monotonic()))
            time.sleep(max(0.0, begin + SECONDS - time.monotonic()))
            stop.set()
            for thread in threads:
                thread.join(timeout=60)
            end = time.monotonic()
            rss.append(("end", app.rss_mb()))
            print("by period:")
            bad = summary(ledger, marks, end)
            print("web worker RSS (largest): " + ", ".join(f"{n} {mb:.0f} MB" for n, mb in rss))
            print(f"Celery worker restarted by the supervisor: {len(restarts)} time(s)")
            print("acknowledged writes:")
            connection.close()  # made before the database restarted
            lost = verify(ledger)
    print(f"500s and unanswered requests: {bad}; writes lost or deletions left pending: {lost}")
    return 1 if bad or lost else 0


if __name__ == "__main__":
    sys.exit(main())
