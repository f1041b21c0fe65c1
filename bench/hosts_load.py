"""`make soak-hosts`, check 3: apps through nginx while host A is killed and started again and
feeds are added in bursts; then every acknowledged write, each deletion and feed check run
once, and the sweep sent by one beat."""

import itertools
import random
import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.harness import Gunicorn, percentile
from bench.hosts_setup import (
    BURST_USERS,
    CLIENTS,
    FEED_INTERVAL,
    SECONDS,
    SHARED_FEEDS,
    FeedServer,
    Nginx,
    bearer,
    check,
    kill_group,
    request,
    users,
)
from bench.soak import PASSWORD, App, Ledger, summary, verify


@dataclass
class HostLedger(Ledger):
    uploaded: list[tuple[int, str]] = field(default_factory=list)  # gpodder adds answered 200


class HostApp(App):
    """soak.App's app through nginx, with gpodder uploads, feeds on the feed server (each add
    asks for a check), and a retry of any request that got no answer from a host."""

    feeds: FeedServer
    ledger: HostLedger

    def call(
        self, kind: str, method: str, path: str, body: Any = None, basic: bool = False
    ) -> tuple[int, Any]:
        # A 502 is nginx's answer when the host that had the request died: whether it was done
        # is not known, so the app sends it again, as apps do when a sync fails. Every one of
        # these writes can be sent twice (an add of the same URL, a PATCH to the same value, a
        # DELETE finding the deletion pending, an episode action stored once).
        for _ in range(5):
            status, answer = super().call(kind, method, path, body, basic)
            if status not in (0, 502, 504):
                break
            time.sleep(0.2)
        return status, answer

    def step(self) -> None:
        if not self.token:
            self.login()
            return
        self.n += 1
        roll, uid, name = self.rng.random(), self.user.pk, self.user.username
        if roll < 0.08:
            url = self.feeds.url(f"/load/{uid}/{self.n}.xml")
            body = {"subscriptions": [{"feed_url": url}]}
            status, answer = self.call("add", "POST", "/v1/subscriptions", body)
            if status == 200:
                with self.ledger.lock:
                    self.ledger.added += [(uid, s["feed_url"]) for s in answer["success"]]
                self.guids += [s["guid"] for s in answer["success"]]
        elif roll < 0.30 and self.guids:
            self.call("get one", "GET", f"/v1/subscriptions/{self.rng.choice(self.guids)}")
        elif roll < 0.40:
            self.call("list", "GET", "/v1/subscriptions?per_page=50")
        elif roll < 0.48 and self.guids:
            change = {"is_subscribed": self.rng.random() < 0.5}
            self.call("patch", "PATCH", f"/v1/subscriptions/{self.rng.choice(self.guids)}", change)
        elif roll < 0.56 and self.guids:
            guid = self.guids.pop(self.rng.randrange(len(self.guids)))
            status, answer = self.call("delete", "DELETE", f"/v1/subscriptions/{guid}")
            if status == 202:
                with self.ledger.lock:
                    self.ledger.deleted.append((uid, answer["deletion_id"]))
        elif roll < 0.62:
            url = self.feeds.url(f"/gpodder/{uid}/{self.n}.xml")
            path = f"/api/2/subscriptions/{name}/hosts.json"
            status, _ = self.call("gpodder upload", "POST", path, {"add": [url]}, basic=True)
            if status == 200:
                with self.ledger.lock:
                    self.ledger.uploaded.append((uid, url))
        elif roll < 0.72:
            path = f"/api/2/subscriptions/{name}/hosts.json?since={int(time.time()) - 60}"
            self.call("gpodder pull", "GET", path, basic=True)
        elif roll < 0.86:
            episode = f"https://hosts.example.com/ep/{uid}/{self.n}.mp3"
            action = {
                "podcast": f"https://hosts.example.com/{uid}",
                "episode": episode,
                "action": "play",
                "position": self.n,
                "device": "hosts",
            }
            status, _ = self.call(
                "episode upload", "POST", f"/api/2/episodes/{name}.json", [action], basic=True
            )
            if status == 200:
                with self.ledger.lock:
                    self.ledger.episodes.append((uid, episode))
        else:
            path = f"/api/2/episodes/{name}.json?since={int(time.time()) - 60}"
            self.call("episode download", "GET", path, basic=True)


def bursts(port: int, feeds: FeedServer, stop: threading.Event, done: list[float]) -> None:
    """Every 2 x FEED_INTERVAL, BURST_USERS users each add the same SHARED_FEEDS feeds through
    nginx: each burst falls in a new due period of every feed, and all of its checks within
    one, so each feed must be fetched exactly once per burst."""
    people = users(BURST_USERS)
    tokens = [
        request(
            port, "POST", "/v1/auth/login", {"username": u.username, "password": PASSWORD}
        ).json()["access_token"]
        for u in people
    ]
    entries = [{"feed_url": feeds.url(f"/shared/{k}.xml")} for k in range(SHARED_FEEDS)]
    while not stop.is_set():
        done.append(time.monotonic())
        for token in tokens:
            for _ in range(5):  # sent again, as an app would, when A died with it
                body = {"subscriptions": entries}
                if request(port, "POST", "/v1/subscriptions", body, bearer(token)).status == 200:
                    break
                time.sleep(0.2)
        stop.wait(2 * FEED_INTERVAL)


def queue_length(env: dict[str, str], name: str) -> int:
    import redis

    return int(redis.Redis.from_url(env["REDIS_URL"]).llen(name))


def load(
    nginx: Nginx, a: Gunicorn, env: dict[str, str], feeds: FeedServer
) -> tuple[HostLedger, list[float]]:
    """The apps through nginx for SECONDS, A killed at 40% and started again at 70%."""
    print(
        f"\n3. load: {CLIENTS} apps through nginx for {SECONDS:.0f} s; A killed at 40%, "
        "started again at 70%; feeds added in bursts"
    )
    people = users(CLIENTS)
    ledger, stop = HostLedger(), threading.Event()
    burst_times: list[float] = []
    backlog: list[int] = []

    def client(n: int) -> None:
        app = HostApp(nginx.port, people[n], ledger, random.Random(n))
        app.feeds = feeds
        while not stop.is_set():
            app.step()

    def watch() -> None:  # how far the feed checks fall behind
        while not stop.wait(1):
            backlog.append(queue_length(env, "feeds"))

    threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
    threads += [
        threading.Thread(target=bursts, args=(nginx.port, feeds, stop, burst_times)),
        threading.Thread(target=watch),
    ]
    # Each period's start by both clocks: the apps' (monotonic) and nginx's log (wall).
    marks, walls = [("before the kill", time.monotonic())], [time.time()]
    begin = marks[0][1]
    try:
        for thread in threads:
            thread.start()
        time.sleep(SECONDS * 0.4)
        marks.append(("A down", time.monotonic()))
        walls.append(time.time())
        kill_group(a)
        print(f"  killed A (SIGKILL to its process group) at {marks[-1][1] - begin:.1f} s")
        time.sleep(max(0.0, begin + SECONDS * 0.7 - time.monotonic()))
        restarting = time.time()
        a.start()
        marks.append(("A back", time.monotonic()))
        walls.append(time.time())
        print(
            f"  A started again at {marks[-1][1] - begin:.1f} s "
            f"(gunicorn took {walls[-1] - restarting:.1f} s to serve)"
        )
        time.sleep(max(0.0, begin + SECONDS - time.monotonic()))
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
    end = time.monotonic()
    walls.append(time.time())
    print("  by period, as the apps saw the answers (retries included):")
    bad = summary(ledger, marks, end)
    down = [row for row in ledger.answers if marks[1][1] <= row[0] < marks[2][1]]
    not_ok = Counter(status for _, _, status, _ in down if not 200 <= status < 300)
    print(f"  answers other than 2xx while A was down: {dict(not_ok) or 'none'}")
    print(f"  feed checks waiting in their queue, at most: {max(backlog, default=0)}")
    print("  by period and host, as nginx logged them (the host's own time):")
    names = {str(a.port): "A", **{str(p): "B" for p in nginx.upstreams if p != a.port}}
    answered = nginx.answers()
    for (period, _), start, stop_at in zip(marks, walls, walls[1:], strict=False):
        for port, host in sorted(names.items(), key=lambda item: item[1]):
            rows = [(s, ms) for at, p, s, ms in answered if p == port and start <= at < stop_at]
            took = [ms for _, ms in rows] or [0.0]
            counts = dict(sorted(Counter(s for s, _ in rows).items()))
            print(
                f"  {period:<16} host {host} {len(rows):6d} requests  p50 "
                f"{percentile(took, 0.5):7.2f} ms  p99 {percentile(took, 0.99):8.2f} ms  {counts}"
            )
    served = [at for at, p, s, _ in answered if p == str(a.port) and at >= walls[2] and s < 300]
    check(
        "web host A killed mid-load: 500s and unanswered requests",
        f"{bad} (502 while A was down: {not_ok.get(502, 0)}, each sent again)",
        "0",
        bad == 0,
    )
    check(
        "web host A started again: serves its share",
        f"{len(served)} requests answered by A after its restart",
        "> 0",
        bool(served),
    )
    return ledger, burst_times


def acknowledged(ledger: HostLedger) -> None:
    from subscriptions.models import Subscription

    print("  acknowledged writes:")
    lost = verify(ledger)
    missing = 0
    for uid, url in ledger.uploaded:
        missing += not Subscription.objects.filter(user_id=uid, feed_url=url).exists()
    print(f"  gpodder uploads acknowledged: {len(ledger.uploaded)}, missing: {missing}")
    writes = len(ledger.added) + len(ledger.deleted) + len(ledger.episodes) + len(ledger.uploaded)
    check(
        "acknowledged writes lost (A killed mid-load)",
        f"{lost + missing} of {writes}",
        "0",
        lost + missing == 0,
    )


def deletions_once(logs: list[Path]) -> None:
    """Each deletion executed once: the workers' task results against the deletions finished.
    A worker returns SUCCESS or FAILURE when it does the work and 'skipped' for a message whose
    deletion was done already; two executions of one deletion would be two results."""
    from deletions.models import Deletion

    results: Counter[str] = Counter()
    for log in logs:
        for found in re.finditer(
            r"process_deletion\[[^]]+\] succeeded in [^:]+: '(\w+)'",
            log.read_text(errors="replace"),
        ):
            results[found[1]] += 1
    finished = Counter(Deletion.objects.exclude(status="PENDING").values_list("status", flat=True))
    attempts = Counter(Deletion.objects.values_list("attempts", flat=True))
    print(
        f"  deletions: {dict(finished)} in the database; the workers' results {dict(results)}; "
        f"worker starts per deletion {dict(attempts)}"
    )
    executions = results["SUCCESS"] + results["FAILURE"]
    done = finished["SUCCESS"] + finished["FAILURE"]
    check(
        "deletions executed exactly once (workers' results vs rows)",
        f"{executions} executions for {done} deletions ({finished['FAILURE']} FAILURE)",
        "equal, none FAILURE",
        executions == done and not finished["FAILURE"],
    )


def feed_checks_once(feeds: FeedServer, burst_times: list[float], added: list[str]) -> None:
    """The shared feeds: one fetch per burst (each burst a due period), never two within
    FEED_INTERVAL. Every other feed was added once: fetched once."""
    shared = [f"/shared/{k}.xml" for k in range(SHARED_FEEDS)]
    counts = [len(feeds.fetches[path]) for path in shared]
    gaps = [b - a for path in shared for a, b in itertools.pairwise(feeds.fetches[path])]
    print(
        f"  shared feeds: {len(burst_times)} bursts of {BURST_USERS} users' adds; fetches per "
        f"feed {counts}; shortest time between two fetches of one feed "
        f"{min(gaps, default=0):.1f} s"
    )
    check(
        "feed checks: each shared feed fetched once per due period",
        f"{sum(counts)} fetches for {SHARED_FEEDS} feeds x {len(burst_times)} bursts, "
        f"shortest gap {min(gaps, default=0):.1f} s",
        f"{SHARED_FEEDS * len(burst_times)}, gaps >= {FEED_INTERVAL} s",
        counts == [len(burst_times)] * SHARED_FEEDS and min(gaps, default=99) >= FEED_INTERVAL,
    )
    prefix = len(feeds.url(""))
    wanted = {url[prefix:] for url in added}
    twice = [p for p, times in feeds.fetches.items() if p not in shared and len(times) > 1]
    never = [p for p in wanted if not feeds.fetches.get(p)]
    others = sum(1 for p in feeds.fetches if p not in shared)
    print(
        f"  other feeds: {others} fetched, {len(wanted)} added and acknowledged; "
        f"fetched twice {len(twice)} {twice[:3]}, never {len(never)} {never[:3]}"
    )
    check(
        "feed checks: every other feed added fetched exactly once",
        f"{len(wanted) - len(never)} of {len(wanted)} once, {len(twice)} twice",
        "all once",
        not twice and not never,
    )


def drained(env: dict[str, str], timeout: float) -> bool:
    """Wait until the feed checks asked for have run (their queue empty, none under way)."""
    from feedchecks.models import FeedCheck

    deadline = time.monotonic() + timeout
    quiet = 0
    while time.monotonic() < deadline:
        busy = queue_length(env, "feeds") or FeedCheck.objects.filter(checked__isnull=True).exists()
        quiet = 0 if busy else quiet + 1
        if quiet >= 3:
            return True
        time.sleep(1)
    return False


def beat_once(logs: list[Path]) -> None:
    """The sweep is sent by beat, which runs in the first worker only: its sends are in that
    worker's log alone; each sweep sent is received and run once, by either worker."""
    texts = [log.read_text(errors="replace") for log in logs]
    sends = [text.count("Sending due task sweep-deletions") for text in texts]
    received = Counter(
        i for t in texts for i in re.findall(r"sweep_deletions\[(.+?)\] received", t)
    )
    ran = [re.findall(r"sweep_deletions\[(.+?)\] succeeded", text) for text in texts]
    runs = Counter(i for ids in ran for i in ids)
    twice = sum(n > 1 for n in received.values()) + sum(n > 1 for n in runs.values())
    print(
        f"  deletion sweeps sent by beat, per worker's log: {sends}; run, per worker: "
        f"{[len(ids) for ids in ran]}; received or run twice: {twice}"
    )
    check(
        "beat: sweeps sent by one worker only, each run once",
        f"sent {sends[0]} + {sends[1]}, run {len(runs)}, twice {twice}",
        "second worker 0, run = sent (the last may be in flight)",
        sends[1] == 0 and sends[0] > 0 and 0 <= sends[0] - len(runs) <= 1 and not twice,
    )
