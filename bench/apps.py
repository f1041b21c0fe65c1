"""An AntennaPod-shaped sync load on any gpodder.net API v2 server.

    python bench/apps.py --url http://127.0.0.1:8000 --user alice --password secret \\
        [--apps 1|4] [--rounds 200] [--timeout 600]

The user must exist on the server; each run adds to it, under the devices bench-app-1 to
bench-app-N, `--subscriptions` (1,000) URLs and `--plays` (5,000) plays an app, and one play a
round. Each app is a process of its own (the load generator is not
held by one GIL) with one kept-alive connection, and talks as AntennaPod's gpodder.net sync does
(GpodnetService and SyncService in AntennaPod's net/sync, read for this):

- User-Agent `AntennaPod/<version>`; Basic only on `POST /api/2/auth/{user}/login.json` (an empty
  `plain/text; charset=utf-8` body), then whatever its cookie jar kept (the session cookie, and
  any other cookie the server sets for the path) on every request; JSON bodies as
  `application/json; charset=utf-8`; a stale kept-alive connection is opened again and the
  request sent again, as OkHttp does.
- A first sync: the device configured (`{"caption", "type": "mobile"}`), 1,000 subscription URLs
  uploaded, a subscription pull from 0; 5,000 plays uploaded 30 at a time (AntennaPod's
  UPLOAD_BULK_SIZE), an episode download from 0. (AntennaPod pulls before it uploads; here the
  pulls follow the uploads, so that they carry the list.)
- Then `--rounds` incremental rounds, with no pause, in SyncService's order: pull subscription
  changes since the timestamp the last pull answered, download episode actions since the episode
  timestamp, upload one play, whose answered timestamp replaces the episode timestamp (as
  AntennaPod keeps it). With several apps they are devices of the one user, and their rounds
  start together. (AntennaPod also logs in again, with Basic, at the start of each sync; these
  rounds do not.)
- Last, once every app is done, each app syncs on until a download brings nothing new; each app
  must then have pulled every URL and every action any app uploaded (this run's, told apart by a
  tag in their URLs), and a download from 0 must hold as many of this run's actions as were
  acknowledged. A server that keeps each device's subscriptions apart (gpodder.net without
  `sync-devices`) shows the other devices' URLs as missing.

It prints, for each phase, the requests, the time, the p50 and the answers that were not 200;
for the rounds, the 200 answers per second over the phase and the p50 of each kind of request.
It stops by itself: the apps that are not done after `--timeout` seconds are ended.
"""

import argparse
import gzip
import http.client
import json
import multiprocessing
import queue
import statistics
import sys
import time
from base64 import b64encode
from collections import Counter
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import urlsplit

USER_AGENT = "AntennaPod/3.8.0"
JSON = "application/json; charset=utf-8"
BATCH = 30  # AntennaPod uploads episode actions 30 at a time
TIMEOUT = 60  # seconds, for one request
ROUND = ("round: subscriptions pull", "round: actions pull", "round: play upload")

Key = tuple[Any, ...]


def action_key(action: dict[str, Any]) -> Key:
    """What tells this load's actions apart: the device, the episode and the position."""
    return (action.get("device"), action.get("episode"), action.get("position"))


@dataclass
class Phase:
    times: list[float] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    start: float = 0.0  # time.monotonic(), the same clock in every process
    end: float = 0.0


class App:
    """One AntennaPod install: its connection, cookie jar, device and the timestamps it keeps.

    `basic_always`: Basic on every request too (Kasts); `cookies=False`: no cookie jar. Several
    apps may share one connection (`conn`), one request at a time."""

    def __init__(
        self,
        url: str,
        user: str,
        password: str,
        device: str,
        *,
        tag: str = "",
        conn: http.client.HTTPConnection | None = None,
        basic_always: bool = False,
        cookies: bool = True,
    ):
        parts = urlsplit(url)
        self.https = parts.scheme == "https"
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port
        self.root = parts.path.rstrip("/")
        self.conn = conn or self.connect()
        self.user, self.device = user, device
        self.basic = "Basic " + b64encode(f"{user}:{password}".encode()).decode()
        self.basic_always, self.keep_cookies = basic_always, cookies
        self.headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "gzip"}
        self.cookies: dict[str, tuple[str, str]] = {}  # name: (value, path)
        self.base = f"https://feeds.example.com/{tag or time.time_ns()}/{device}"
        self.played = 0
        self.subscriptions_since = 0
        self.actions_since = 0
        self.phase = "setup"
        self.phases: dict[str, Phase] = {}
        self.reconnects = 0
        self.last_bytes = 0
        self.pulled: list[int] = []  # the actions each download answered
        self.redelivered = 0  # actions the rounds' downloads brought that the app already had
        self.uploaded_urls: set[str] = set()  # acknowledged (a 200)
        self.uploaded_actions: set[Key] = set()
        self.seen_urls: set[str] = set()
        self.seen_actions: set[Key] = set()

    def connect(self) -> http.client.HTTPConnection:
        kind = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
        return kind(self.host, self.port, timeout=TIMEOUT)

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        basic: bool = False,
        content_type: str = JSON,
    ) -> tuple[int, Any, float]:
        """One request: its status, JSON body (on a 200) and time in seconds, counted in the
        current phase."""
        headers = dict(self.headers)
        if basic or self.basic_always:
            headers["Authorization"] = self.basic
        sent = [
            f"{name}={value}"
            for name, (value, at) in self.cookies.items()
            if (self.root + path).startswith(at)
        ]
        if sent:
            headers["Cookie"] = "; ".join(sent)
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            headers["Content-Type"] = content_type
        phase = self.phases.setdefault(self.phase, Phase())
        start = time.monotonic()
        phase.start = phase.start or start
        for attempt in range(2):
            try:
                self.conn.request(method, self.root + path, body=data, headers=headers)
                response = self.conn.getresponse()
                payload = response.read()
                break
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                # The server closed the kept-alive connection while it was idle.
                self.conn.close()
                self.reconnects += 1
                if attempt:
                    raise
        phase.end = time.monotonic()
        took = phase.end - start
        phase.times.append(took)
        phase.statuses[response.status] += 1
        self.last_bytes = len(payload)
        if self.keep_cookies:
            self.keep(response.headers.get_all("Set-Cookie") or [])
        if response.getheader("Content-Encoding") == "gzip":
            payload = gzip.decompress(payload)
        answer = json.loads(payload) if response.status == 200 and payload else None
        return response.status, answer, took

    def keep(self, set_cookies: list[str]) -> None:
        for header in set_cookies:
            jar: SimpleCookie = SimpleCookie()
            jar.load(header)
            for name, morsel in jar.items():
                if morsel["max-age"] == "0" or not morsel.value:
                    self.cookies.pop(name, None)
                else:
                    self.cookies[name] = (morsel.value, morsel["path"] or "/")

    # AntennaPod's requests; each answers its time in seconds.

    def login(self) -> float:
        path = f"/api/2/auth/{self.user}/login.json"
        return self.call("POST", path, b"", basic=True, content_type="plain/text; charset=utf-8")[2]

    def configure(self, caption: str) -> float:
        path = f"/api/2/devices/{self.user}/{self.device}.json"
        return self.call("POST", path, {"caption": caption, "type": "mobile"})[2]

    def upload_subscriptions(self, urls: list[str]) -> float:
        path = f"/api/2/subscriptions/{self.user}/{self.device}.json"
        status, answer, took = self.call("POST", path, {"add": urls, "remove": []})
        if status == 200:
            self.uploaded_urls.update(urls)
            self.subscriptions_since = answer["timestamp"]
        return took

    def pull_subscriptions(self) -> float:
        path = f"/api/2/subscriptions/{self.user}/{self.device}.json"
        status, answer, took = self.call("GET", f"{path}?since={self.subscriptions_since}")
        if status == 200:
            self.seen_urls.update(answer["add"])
            self.subscriptions_since = answer["timestamp"]
        return took

    def pull_actions(self) -> float:
        path = f"/api/2/episodes/{self.user}.json?since={self.actions_since}"
        status, answer, took = self.call("GET", path)
        if status == 200:
            self.saw(answer["actions"])
            self.actions_since = answer["timestamp"]
        return took

    def upload_actions(self, actions: list[dict[str, Any]]) -> float:
        status, answer, took = self.call("POST", f"/api/2/episodes/{self.user}.json", actions)
        if status == 200:
            self.uploaded_actions.update(map(action_key, actions))
            self.actions_since = answer["timestamp"]  # AntennaPod keeps the upload's timestamp
        return took

    def upload_play(self) -> float:
        return self.upload_actions(self.plays(1))

    def round(self) -> float:
        """An incremental sync, in SyncService's order, each request counted in its phase."""
        took = 0.0
        for phase, step in zip(
            ROUND, (self.pull_subscriptions, self.pull_actions, self.upload_play), strict=True
        ):
            self.phase = phase
            took += step()
        return took

    def saw(self, actions: list[dict[str, Any]]) -> int:
        """Note a download's actions; answers how many were new to this app."""
        keys = set(map(action_key, actions))
        new = len(keys - self.seen_actions)
        if self.phase in ROUND:
            self.redelivered += len(keys) - len(keys - self.seen_actions - self.uploaded_actions)
        self.seen_actions |= keys
        self.pulled.append(len(actions))
        return new

    def feeds(self, count: int) -> list[str]:
        return [f"{self.base}/{n}.xml" for n in range(count)]

    def plays(self, count: int, ago: float = 0.0) -> list[dict[str, Any]]:
        """New play actions, each its own episode, as AntennaPod writes them: stamped with the
        time they were played, `ago` seconds before now."""
        now = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() - ago))
        made = []
        for n in range(self.played, self.played + count):
            made.append(
                {
                    "podcast": f"{self.base}/{n % 100}.xml",
                    "episode": f"{self.base}/{n % 100}/{n}.mp3",
                    "guid": f"{self.base}/{n}",
                    "action": "play",
                    "timestamp": now,
                    "started": 0,
                    "position": 60 + n % 3000,
                    "total": 3600,
                    "device": self.device,
                }
            )
        self.played += count
        return made

    def report(self) -> dict[str, Any]:
        return {
            "phases": self.phases,
            "reconnects": self.reconnects,
            "redelivered": self.redelivered,
            "uploaded_urls": self.uploaded_urls,
            "uploaded_actions": self.uploaded_actions,
            "seen_urls": self.seen_urls,
            "seen_actions": self.seen_actions,
        }


def sync_on(app: App, limit: int = 1000) -> None:
    """Download from the app's timestamp until nothing new comes (the app's next syncs)."""
    for _ in range(limit):
        before = len(app.seen_actions)
        status, answer, _ = app.call(
            "GET", f"/api/2/episodes/{app.user}.json?since={app.actions_since}"
        )
        if status != 200:
            return
        app.saw(answer["actions"])
        app.actions_since = answer["timestamp"]
        if len(app.seen_actions) == before:
            return


def one_app(
    url: str,
    user: str,
    password: str,
    index: int,
    tag: str,
    counts: tuple[int, int, int],
    barrier: Any,
    results: Any,
) -> None:
    """An app's whole run, in its own process; puts its report (or its error) in `results`."""
    subscriptions, plays, rounds = counts
    try:
        app = App(url, user, password, f"bench-app-{index + 1}", tag=tag)
        app.phase = "login"
        app.login()
        app.phase = "device"
        app.configure(f"AntennaPod, bench app {index + 1}")
        app.phase = "subscriptions upload"
        app.upload_subscriptions(app.feeds(subscriptions))
        app.phase, app.subscriptions_since = "subscriptions pull since=0", 0
        app.pull_subscriptions()
        app.phase = f"plays upload, {BATCH} a request"
        for start in range(0, plays, BATCH):
            app.upload_actions(app.plays(min(BATCH, plays - start)))
        app.phase, app.actions_since = "actions pull since=0", 0
        app.pull_actions()
        app.pulled.clear()
        barrier.wait(timeout=600)
        rounds_start = time.monotonic()
        for _ in range(rounds):
            app.round()
        rounds_end = time.monotonic()
        pulled = list(app.pulled)
        barrier.wait(timeout=600)  # every app's uploads are in
        app.phase = "last sync"
        app.pull_subscriptions()
        sync_on(app)
        results.put({**app.report(), "pulled": pulled, "rounds": (rounds_start, rounds_end)})
    except BaseException as error:
        barrier.abort()
        results.put({"error": f"app {index + 1}: {error!r}"})


@dataclass
class Summary:
    apps: int
    ok_per_s: float  # 200 answers a second over the rounds
    request_p50_ms: float  # of the rounds' requests
    round_p50_ms: float  # the sum of each kind's p50
    not_200: int  # answers other than 200, in all phases
    failed: list[str]  # apps that stopped with an error
    missing: int  # uploads some app's pulls or the download from 0 did not hold
    redelivered: int  # actions the rounds' downloads brought to an app that already had them
    phase_p50_ms: dict[str, float]
    requests: int = 0  # answered, in all phases of all apps


def run(
    url: str,
    user: str,
    password: str,
    apps: int = 1,
    rounds: int = 200,
    subscriptions: int = 1000,
    plays: int = 5000,
    timeout: float = 600,
) -> Summary:
    """The load, with `apps` devices of `user` at once; prints and answers its figures."""
    tag = f"{time.time_ns():x}"
    context = multiprocessing.get_context("spawn")  # nothing of the caller's (Django) is shared
    barrier, results = context.Barrier(apps), context.Queue()
    processes = [
        context.Process(
            target=one_app,
            args=(url, user, password, n, tag, (subscriptions, plays, rounds), barrier, results),
            daemon=True,
        )
        for n in range(apps)
    ]
    for process in processes:
        process.start()
    reports: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while len(reports) < apps and time.monotonic() < deadline:
        try:
            reports.append(results.get(timeout=1))
        except queue.Empty:
            if not any(process.is_alive() for process in processes):
                break
    for process in processes:
        process.join(timeout=5)
        if process.is_alive():
            process.terminate()
            process.join()
    failed = [report["error"] for report in reports if "error" in report]
    done = [report for report in reports if "error" not in report]
    if len(reports) < apps:
        failed.append(f"{apps - len(reports)} app(s) not done in {timeout:.0f} s")

    def say(line: str) -> None:
        print(f"  {line}", flush=True)

    say(f"{apps} app(s) of {user} at {url}, {rounds} rounds each (tag {tag})")
    not_200 = requests = 0
    phase_p50: dict[str, float] = {}
    names = list(dict.fromkeys(name for report in done for name in report["phases"]))
    for name in names:
        phases = [report["phases"][name] for report in done if name in report["phases"]]
        times = [t for phase in phases for t in phase.times]
        statuses: Counter[int] = sum((phase.statuses for phase in phases), Counter())
        bad = {status: n for status, n in statuses.items() if status != 200}
        not_200 += sum(bad.values())
        took = max(phase.end for phase in phases) - min(phase.start for phase in phases)
        phase_p50[name] = median_ms(times)
        requests += len(times)
        say(
            f"{name}: {len(times):,} requests in {took:.2f} s, p50 {median_ms(times):.2f} ms"
            + (f", NOT 200: {bad}" if bad else "")
        )
    ok_per_s = request_p50 = round_p50 = 0.0
    redelivered = 0
    if done and rounds:
        start = min(report["rounds"][0] for report in done)
        end = max(report["rounds"][1] for report in done)
        ok = sum(report["phases"][name].statuses[200] for report in done for name in ROUND)
        kinds = [[t for r in done for t in r["phases"][name].times] for name in ROUND]
        pulled = [n for report in done for n in report["pulled"]]
        redelivered = sum(report["redelivered"] for report in done)
        ok_per_s = ok / (end - start)
        request_p50 = median_ms([t for times in kinds for t in times])
        round_p50 = sum(median_ms(times) for times in kinds)
        say(
            f"rounds: {ok:,} answers 200 in {end - start:.2f} s: {ok_per_s:.0f} ok/s; p50 a "
            f"request {request_p50:.2f} ms ({' + '.join(f'{median_ms(t):.2f}' for t in kinds)} = "
            f"{round_p50:.2f} ms a round); actions a download: median "
            f"{statistics.median(pulled or [0]):.0f}, most {max(pulled or [0]):,}; "
            f"already had: {redelivered:,} of {sum(pulled):,}"
        )
    reconnects = sum(report["reconnects"] for report in done)
    if reconnects:
        say(f"connections opened again after the server closed them: {reconnects}")
    missing = check(url, user, password, tag, done, say) if done else 0
    for error in failed:
        say(f"FAILED: {error}")
    return Summary(
        apps,
        ok_per_s,
        request_p50,
        round_p50,
        not_200,
        failed,
        missing,
        redelivered,
        phase_p50,
        requests,
    )


def late_phone(url: str, user: str, password: str, count: int = 600, lag: float = 600) -> int:
    """A phone `lag` seconds behind: after another device of `user` has synced, it uploads
    `count` plays stamped with when they were played, `lag` seconds ago (offline, on the train).
    Answers how many of them the other device's next syncs do not bring: a server that files an
    action under the time written on it, not when it arrived, loses them all."""
    tag = f"late-{time.time_ns():x}"
    reader = App(url, user, password, "bench-late-reader", tag=tag)
    phone = App(url, user, password, "bench-late-phone", tag=tag)
    for app in (reader, phone):
        app.phase = "late phone"
        app.login()
    sync_on(reader)
    for start in range(0, count, BATCH):
        phone.upload_actions(phone.plays(min(BATCH, count - start), ago=lag))
    sync_on(reader)
    return len(phone.uploaded_actions - reader.seen_actions) + count - len(phone.uploaded_actions)


def check(
    url: str, user: str, password: str, tag: str, done: list[dict[str, Any]], say: Any
) -> int:
    """Each app's pulls against every app's acknowledged uploads, and a download from 0 against
    them all; answers how many were missing in all."""
    urls = set().union(*(report["uploaded_urls"] for report in done))
    actions = set().union(*(report["uploaded_actions"] for report in done))
    missing = 0
    for n, report in enumerate(done):
        lost_urls = sorted(urls - report["seen_urls"])
        lost_actions = sorted(actions - report["seen_actions"], key=str)
        missing += len(lost_urls) + len(lost_actions)
        if lost_urls or lost_actions:
            say(
                f"app {n + 1}'s pulls MISS {len(lost_urls):,} URLs and {len(lost_actions):,} "
                f"actions, such as {(lost_urls[:2] + lost_actions[:2])}"
            )
    app = App(url, user, password, "bench-app-1", tag=tag)
    app.phase = "check"
    app.login()
    sync_on(app)  # from 0, on until nothing new
    held = {key for key in app.seen_actions if tag in str(key[1])}
    missing += len(actions - held)
    status = app.phases["check"].statuses
    say(
        f"nothing lost? each app's pulls held all {len(urls):,} URLs and {len(actions):,} "
        f"actions the apps uploaded, and a download from 0 all the actions: "
        f"{'yes' if not missing else 'NO'}; the download from 0 holds "
        f"{len(held):,} of the {len(actions):,} distinct actions acknowledged"
        + ("" if set(status) == {200} else f" (answers {dict(status)})")
    )
    return missing


def median_ms(times: list[float]) -> float:
    return statistics.median(times) * 1000 if times else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="the server, e.g. http://127.0.0.1:8000")
    parser.add_argument("--user", required=True, help="an existing user")
    parser.add_argument("--password", required=True)
    parser.add_argument("--apps", type=int, default=1, help="devices of the user at once")
    parser.add_argument("--rounds", type=int, default=200, help="incremental rounds per app")
    parser.add_argument("--subscriptions", type=int, default=1000)
    parser.add_argument("--plays", type=int, default=5000)
    parser.add_argument("--timeout", type=float, default=600, help="seconds, for the whole run")
    args = parser.parse_args()
    summary = run(
        args.url,
        args.user,
        args.password,
        apps=args.apps,
        rounds=args.rounds,
        subscriptions=args.subscriptions,
        plays=args.plays,
        timeout=args.timeout,
    )
    sys.exit(1 if summary.failed or summary.missing or summary.not_200 else 0)


if __name__ == "__main__":
    main()
