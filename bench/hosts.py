"""`make soak-hosts`: the service as several machines run it, on loopback, and the promises of
docs/operations.md ("Scaling out") checked across them.

Started here: one PostgreSQL with PgBouncer in transaction mode in front (the service on
`DATABASE_POOL_MODE=transaction`), one Redis, two gunicorn servers with the production settings
standing for two web hosts A and B (same SECRET_KEY, each on its own port), Debian's nginx as
the load balancer in front of both (round robin, X-Forwarded-For and X-Forwarded-Proto set,
`NUM_PROXIES=1`), two Celery workers of which only one runs beat, and a feed server.

Then, in order:
1. read-your-writes: a write answered by one host is read by the other at once, for every API
   (/v1/ with a token, gpodder with its session cookie, Nextcloud with app passwords);
2. an app password revoked, then a password changed, on A's pages: what they ended is refused
   by both hosts at once, the old /v1/ access tokens included (every web process hears of the
   change through Redis, accounts.invalidation), each on the first try on each host;
3. the load, HOSTS_SECONDS (120) of apps through nginx, during which gunicorn A is killed
   (SIGKILL to its process group) and later started again, and feeds are added in bursts;
   then every acknowledged write is looked for, every deletion must end SUCCESS having been
   executed once, each feed fetched once per FEED_CHECK_INTERVAL it was asked for in, and the
   deletion sweep sent by one beat only, each sweep executed once;
4. the throttle, both hosts started again with a low THROTTLE_USER_RATE: requests sent to both
   are counted once, and anonymous clients behind nginx are told apart by X-Forwarded-For.

It prints a table of each check, its figure and target, and exits non-zero when one is missed.
Everything it starts is stopped at the end, on failure too.
"""

import http.client
import http.server
import itertools
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from base64 import b64encode
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.run import WORKERS, Gunicorn, django_on, percentile, running
from bench.soak import PASSWORD, App, Ledger, summary, verify
from tests import servers

SECONDS = float(os.environ.get("HOSTS_SECONDS", "120"))  # the load's length
CLIENTS = int(os.environ.get("HOSTS_CLIENTS", "6"))  # apps through nginx during the load
ROUNDS = int(os.environ.get("HOSTS_RYW_ROUNDS", "300"))  # read-your-writes rounds
TRIES = 8  # requests per credential and host, each on a new connection: several web workers
FEED_INTERVAL = 10  # FEED_CHECK_INTERVAL for the run: a feed is due again after 10 s
SHARED_FEEDS = 5  # feeds added by several users in each burst
BURST_USERS = 4
SWEEP_INTERVAL = 5  # DELETION_SWEEP_INTERVAL for the run: a dozen sweeps or more
THROTTLE_RATE = 120  # requests per minute and user, for the throttle's check
# How long a web process trusts a user it read (the default, 10 s; 0 reads it on every request).
AUTH_CACHE = int(os.environ.get("AUTH_USER_CACHE_SECONDS", "10"))
NEW_PASSWORD = "hosts-soak-another-password"

ROWS: list[tuple[str, str, str, bool]] = []  # the table: check, measured, target, met


def check(name: str, measured: str, target: str, met: bool) -> None:
    ROWS.append((name, measured, target, met))
    print(f"  {'met' if met else 'MISSED'}: {name}: {measured} (target {target})", flush=True)


# --- HTTP ----------------------------------------------------------------------------------


@dataclass
class Answer:
    status: int
    body: bytes
    cookies: dict[str, str]
    headers: dict[str, str]
    seconds: float

    def json(self) -> Any:
        try:
            return json.loads(self.body) if self.body else None
        except ValueError:
            return None


def request(
    port: int,
    method: str,
    path: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
    source: str = "127.0.0.1",
) -> Answer:
    """One request on a new connection: the kernel then hands each to any of the host's web
    workers (SO_REUSEPORT), so a check is not confined to the one worker a kept-alive
    connection would stay with. Status 0: no answer."""
    data = body if body is None or isinstance(body, bytes) else json.dumps(body).encode()
    sent = {"Content-Type": "application/json", **(headers or {})}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=(source, 0))
    start = time.perf_counter()
    try:
        conn.request(method, path, data, sent)
        response = conn.getresponse()
        payload = response.read()
    except OSError:
        return Answer(0, b"", {}, {}, time.perf_counter() - start)
    finally:
        conn.close()
    cookies = {}
    for cookie in response.msg.get_all("Set-Cookie") or []:
        name, _, value = cookie.split(";", 1)[0].partition("=")
        cookies[name.strip()] = value.strip()
    answered = {key.lower(): value for key, value in response.getheaders()}
    return Answer(response.status, payload, cookies, answered, time.perf_counter() - start)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def basic(username: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + b64encode(f"{username}:{password}".encode()).decode()}


def session(cookie: str) -> dict[str, str]:
    return {"Cookie": f"sessionid={cookie}"}


class Browser:
    """A person on the pages of one host: the cookies, and the CSRF token of the last page."""

    def __init__(self, port: int):
        self.port, self.csrf = port, ""
        self.cookies: dict[str, str] = {}

    def go(self, method: str, path: str, form: dict[str, str] | None = None) -> Answer:
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        body = None
        if form is not None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            body = urlencode({**form, "csrfmiddlewaretoken": self.csrf}).encode()
        answer = request(self.port, method, path, body, headers)
        self.cookies.update(answer.cookies)
        found = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', answer.body)
        if found:
            self.csrf = found[1].decode()
        return answer

    def sign_in(self, username: str, password: str) -> None:
        self.go("GET", "/login/")
        signed_in = self.go("POST", "/login/", {"username": username, "password": password})
        assert signed_in.status == 302, f"sign-in answered {signed_in.status}"
        self.go("GET", "/account/")  # the token Django rotated at sign-in

    def app_password(self, name: str) -> str:
        made = self.go("POST", "/account/app-passwords/", {"name": name})
        found = re.search(rb'<code class="password">([^<]+)</code>', made.body)
        assert made.status == 200, f"making an app password answered {made.status}"
        assert found, "no app password on the page"
        return found[1].decode()


# --- the processes -------------------------------------------------------------------------


class Nginx:
    """Debian's nginx, run as its own process on a generated configuration in a folder of its
    own: round robin over the web hosts, with the headers docs/operations.md ("Behind a proxy")
    asks of a proxy. Its access log names the host that answered each request."""

    def __init__(self, upstreams: list[int], base: Path):
        self.upstreams = upstreams
        self.base = base  # its configuration, logs and temporary files
        self.port = servers.free_port()
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> "Nginx":
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        self.base.mkdir(exist_ok=True)
        hosts = "\n".join(
            # Marked down for 2 s after a failure: the next request then goes to the other.
            f"        server 127.0.0.1:{port} max_fails=1 fail_timeout=2s;"
            for port in self.upstreams
        )
        config = self.base / "nginx.conf"
        config.write_text(
            ("user root;\n" if os.geteuid() == 0 else "")
            + f"""worker_processes 1;
pid {self.base}/nginx.pid;
error_log {self.base}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    log_format hosts '$msec\t$upstream_addr\t$upstream_response_time\t$status\t'
                     '$request_method $uri';
    access_log {self.base}/access.log hosts;
    client_body_temp_path {self.base}/body;
    proxy_temp_path {self.base}/proxy;
    fastcgi_temp_path {self.base}/fastcgi;
    uwsgi_temp_path {self.base}/uwsgi;
    scgi_temp_path {self.base}/scgi;
    client_max_body_size 2m;
    client_body_timeout 30s;
    client_header_timeout 30s;
    upstream web {{
{hosts}
        keepalive 32;
        # Under gunicorn's keepalive (5 s): nginx never sends a request on a connection that
        # gunicorn is closing, which would be a 502 for a POST (never retried, see below).
        keepalive_timeout 4s;
    }}
    server {{
        listen 127.0.0.1:{self.port};
        location / {{
            proxy_pass http://web;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            # A host that refuses the connection or fails before answering: the other one
            # takes the request, unless it is a POST or PATCH that may have reached the first
            # (nginx never sends those twice: the client gets a 502 and decides).
            proxy_next_upstream error timeout;
            proxy_next_upstream_tries 2;
            proxy_connect_timeout 2s;
            proxy_read_timeout 60s;
        }}
    }}
}}
"""
        )
        self.process = subprocess.Popen(
            [
                binary,
                "-c",
                str(config),
                "-p",
                str(self.base),
                "-e",
                str(self.base / "error.log"),
                "-g",
                "daemon off;",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while request(self.port, "GET", "/health").status == 0:
            if self.process.poll() is not None or time.monotonic() > deadline:
                log = (self.base / "error.log").read_text(errors="replace")
                raise RuntimeError(f"nginx did not start:\n{log[-2000:]}")
            time.sleep(0.1)
        return self

    def answers(self) -> list[tuple[float, str, int, float]]:
        """Each request nginx answered: when (wall clock), the port of the host that answered it
        (the last one tried), the status, and the host's time in ms."""
        rows = []
        for line in (self.base / "access.log").read_text(errors="replace").splitlines():
            at, addresses, times, status, _ = line.split("\t")
            # Tried in turn when one failed: "A, B" and "0.001, 0.004". The last one answered.
            port = addresses.split(",")[-1].strip().rsplit(":", 1)[-1]
            took = times.split(",")[-1].strip()
            ms = float(took) * 1000 if took != "-" else 0.0
            rows.append((float(at), port, int(status), ms))
        return rows

    def stop(self) -> None:
        if self.process is not None:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=30)
            self.process = None


class FeedServer:
    """A feed at any path, and when each path was fetched: the feed checks counted where their
    fetches arrive."""

    def __init__(self) -> None:
        from tests.feedchecks.feedserver import rss  # imports Django's models: after setup

        self.fetches: dict[str, list[float]] = defaultdict(list)
        lock, fetches, body = threading.Lock(), self.fetches, rss()

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                with lock:
                    fetches[self.path].append(time.monotonic())
                self.send_response(200)
                self.send_header("Content-Type", "application/rss+xml")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def kill_group(app: Gunicorn) -> None:
    """SIGKILL to the gunicorn master and its workers at once, as a machine that dies."""
    assert app.process is not None
    os.killpg(app.process.pid, signal.SIGKILL)
    app.process.wait(timeout=30)
    app.process = None


def users(count: int) -> list[Any]:
    from tests.factories import UserFactory

    return [UserFactory(with_password=PASSWORD) for _ in range(count)]


# --- 1. read-your-writes -------------------------------------------------------------------


class Reader:
    """One account synced by several apps, each writing on one host and reading on the other.

    The reads are what an app syncing on the other host asks next: GET one and the list since
    the last change it saw (/v1/), a pull since its last timestamp (gpodder, Nextcloud)."""

    def __init__(self, ports: dict[str, int], feeds: FeedServer):
        from accounts.services import app_password_create

        self.ports, self.feeds = ports, feeds
        self.user = users(1)[0]
        name = self.user.username
        self.token = request(
            ports["A"], "POST", "/v1/auth/login", {"username": name, "password": PASSWORD}
        ).json()["access_token"]
        self.cookie = request(
            ports["A"], "POST", f"/api/2/auth/{name}/login.json", headers=basic(name, PASSWORD)
        ).cookies["sessionid"]
        # Two Nextcloud apps: a phone that writes and a tablet that reads, each a device.
        self.phone = basic(name, app_password_create(user=self.user, name="phone")[1])
        self.tablet = basic(name, app_password_create(user=self.user, name="tablet")[1])
        self.guids: list[str] = []
        self.since = {"v1": "", "gpodder": 0, "episodes": 0, "nc": 0, "nc episodes": 0}
        self.took: dict[str, list[float]] = defaultdict(list)
        self.added: list[str] = []  # feed URLs whose adds were answered 200

    def call(self, host: str, method: str, path: str, body: Any, headers: dict[str, str]) -> Any:
        answer = request(self.ports[host], method, path, body, headers)
        self.took[host].append(answer.seconds * 1000)
        if answer.status != 200:
            raise AssertionError(
                f"{method} {path} on {host}: {answer.status} {answer.body[:200]!r}"
            )
        return answer.json()

    def v1_add(self, w: str, r: str, n: int) -> bool:
        url = self.feeds.url(f"/ryw/{n}.xml")
        added = self.call(
            w,
            "POST",
            "/v1/subscriptions",
            {"subscriptions": [{"feed_url": url}]},
            bearer(self.token),
        )["success"][0]
        self.added.append(url)
        self.guids.append(added["guid"])
        one = self.call(r, "GET", f"/v1/subscriptions/{added['guid']}", None, bearer(self.token))
        since = f"since={self.since['v1']}&" if self.since["v1"] else ""
        listed = self.call(
            r, "GET", f"/v1/subscriptions?{since}per_page=500", None, bearer(self.token)
        )["subscriptions"]
        self.since["v1"] = added["subscription_changed"]
        return one["feed_url"] == url and added["guid"] in {s["guid"] for s in listed}

    def v1_patch(self, w: str, r: str, n: int) -> bool:
        guid = self.guids[-1]
        wanted = n % 2 == 0
        self.call(
            w, "PATCH", f"/v1/subscriptions/{guid}", {"is_subscribed": wanted}, bearer(self.token)
        )
        one = self.call(r, "GET", f"/v1/subscriptions/{guid}", None, bearer(self.token))
        return bool(one["is_subscribed"] is wanted)

    def gpodder_subscriptions(self, w: str, r: str, n: int) -> bool:
        name, url = self.user.username, self.feeds.url(f"/ryw-gpodder/{n}.xml")
        self.call(
            w,
            "POST",
            f"/api/2/subscriptions/{name}/phone.json",
            {"add": [url], "remove": []},
            session(self.cookie),
        )
        self.added.append(url)
        pulled = self.call(
            r,
            "GET",
            f"/api/2/subscriptions/{name}/tablet.json?since={self.since['gpodder']}",
            None,
            session(self.cookie),
        )
        self.since["gpodder"] = pulled["timestamp"]
        return url in pulled["add"]

    def action(self, n: int, device: str) -> dict[str, Any]:
        return {
            "podcast": "https://ryw.example.com/podcast.xml",
            "action": "play",
            "position": n,
            "episode": f"https://ryw.example.com/{n}.mp3",
            "device": device,
        }

    def gpodder_episodes(self, w: str, r: str, n: int) -> bool:
        name, action = self.user.username, self.action(n, "phone")
        self.call(w, "POST", f"/api/2/episodes/{name}.json", [action], session(self.cookie))
        got = self.call(
            r,
            "GET",
            f"/api/2/episodes/{name}.json?since={self.since['episodes']}",
            None,
            session(self.cookie),
        )
        self.since["episodes"] = got["timestamp"]
        return action["episode"] in {a["episode"] for a in got["actions"]}

    def nextcloud_subscriptions(self, w: str, r: str, n: int) -> bool:
        url, app = self.feeds.url(f"/ryw-nextcloud/{n}.xml"), "/index.php/apps/gpoddersync"
        self.call(
            w, "POST", f"{app}/subscription_change/create", {"add": [url], "remove": []}, self.phone
        )
        self.added.append(url)
        pulled = self.call(
            r, "GET", f"{app}/subscriptions?since={self.since['nc']}", None, self.tablet
        )
        self.since["nc"] = pulled["timestamp"]
        return url in pulled["add"]

    def nextcloud_episodes(self, w: str, r: str, n: int) -> bool:
        action, app = self.action(n, "phone"), "/index.php/apps/gpoddersync"
        del action["device"]  # the app password's device
        self.call(w, "POST", f"{app}/episode_action/create", [action], self.phone)
        got = self.call(
            r, "GET", f"{app}/episode_action?since={self.since['nc episodes']}", None, self.tablet
        )
        self.since["nc episodes"] = got["timestamp"]
        return action["episode"] in {a["episode"] for a in got["actions"]}


def read_your_writes(ports: dict[str, int], feeds: FeedServer) -> list[str]:
    """Each round writes on one host and reads on the other at once; the hosts swap roles
    every round of all kinds. Returns the feed URLs whose adds were answered."""
    print(f"\n1. read-your-writes: {ROUNDS} rounds, written on one host, read on the other")
    reader = Reader(ports, feeds)
    kinds: dict[str, Callable[[str, str, int], bool]] = {
        "/v1/ add -> GET one and list": reader.v1_add,
        "/v1/ PATCH -> GET one": reader.v1_patch,
        "gpodder upload -> pull (cookie)": reader.gpodder_subscriptions,
        "gpodder episode upload -> download": reader.gpodder_episodes,
        "Nextcloud change -> pull (app passwords)": reader.nextcloud_subscriptions,
        "Nextcloud episode action -> download": reader.nextcloud_episodes,
    }
    rounds: Counter[str] = Counter()
    stale: Counter[str] = Counter()
    for n in range(ROUNDS):
        kind = list(kinds)[n % len(kinds)]
        w, r = ("A", "B") if (n // len(kinds)) % 2 == 0 else ("B", "A")
        rounds[kind] += 1
        try:
            fresh = kinds[kind](w, r, n)
        except AssertionError as exc:
            print(f"  round {n}: {exc}")
            fresh = False
        if not fresh:
            stale[kind] += 1
    for kind in kinds:
        print(f"  {kind:<42} {rounds[kind]:4d} rounds, {stale[kind]} stale or failed")
    for host, took in reader.took.items():
        print(
            f"  host {host}: {len(took)} requests, p50 {percentile(took, 0.5):.1f} ms, "
            f"p99 {percentile(took, 0.99):.1f} ms"
        )
    total = sum(stale.values())
    check(
        "read-your-writes across hosts (6 kinds, 3 APIs)",
        f"{total} stale of {ROUNDS} rounds",
        "0 stale",
        total == 0,
    )
    return reader.added


# --- 2. revocation -------------------------------------------------------------------------

Probe = Callable[[int], int]  # a request to a host's port: its status
REFUSED = (401, 403)


def statuses(
    probes: dict[str, Probe], ports: dict[str, int], tries: int = TRIES
) -> dict[str, list[int]]:
    """The statuses of `tries` requests of each probe on each host, by 'probe on host'; each
    request on a new connection, so that several web workers of each host answer."""
    return {
        f"{name} on {host}": [probe(port) for _ in range(tries)]
        for name, probe in probes.items()
        for host, port in ports.items()
    }


def credentials_of(user: Any, ports: dict[str, int], password: str) -> dict[str, Probe]:
    """What apps signed in with `password` (the account's or an app password) hold, as probes:
    a /v1/ access token and refresh token, a gpodder session cookie, and the password itself as
    Basic on gpodder and Nextcloud. Signed in on A and B both."""
    name = user.username
    tokens = request(
        ports["A"], "POST", "/v1/auth/login", {"username": name, "password": password}
    ).json()
    cookie = request(
        ports["B"], "POST", f"/api/2/auth/{name}/login.json", headers=basic(name, password)
    ).cookies["sessionid"]
    pull = f"/api/2/subscriptions/{name}/probe.json?since=0"
    nextcloud = "/index.php/apps/gpoddersync/subscriptions?since=0"
    return {
        "/v1/ access token": lambda port: (
            request(
                port, "GET", "/v1/subscriptions?per_page=1", headers=bearer(tokens["access_token"])
            ).status
        ),
        "gpodder cookie": lambda port: request(port, "GET", pull, headers=session(cookie)).status,
        "gpodder Basic": lambda port: (
            request(port, "GET", pull, headers=basic(name, password)).status
        ),
        "Nextcloud Basic": lambda port: (
            request(port, "GET", nextcloud, headers=basic(name, password)).status
        ),
        # Sent once to each host, after the change: a refresh token rotates when it works.
        "refresh token": lambda port: (
            request(
                port, "POST", "/v1/auth/refresh", {"refresh_token": tokens["refresh_token"]}
            ).status
        ),
    }


def warmed(probes: dict[str, Probe], ports: dict[str, int]) -> bool:
    """Every credential but the refresh token used on both hosts, so that each host's web
    workers remember the user, the token, the session and the Basic credentials; all 200."""
    used = {name: probe for name, probe in probes.items() if name != "refresh token"}
    return all(status == 200 for got in statuses(used, ports).values() for status in got)


def refused(probes: dict[str, Probe], ports: dict[str, int]) -> tuple[int, int, str]:
    """Every probe on both hosts (the refresh token once on each): how many requests were
    refused, of how many, and the probes that were not refused every time."""
    got = statuses({k: p for k, p in probes.items() if k != "refresh token"}, ports)
    if "refresh token" in probes:
        got.update(statuses({"refresh token": probes["refresh token"]}, ports, tries=1))
    no = sum(s in REFUSED for answered in got.values() for s in answered)
    asked = sum(len(answered) for answered in got.values())
    wanting = [
        f"{key}: {answered}"
        for key, answered in got.items()
        if any(s not in REFUSED for s in answered)
    ]
    return no, asked, "; ".join(wanting)


def revocation(ports: dict[str, int]) -> None:
    from accounts.models import AppPassword

    print("\n2. an app password revoked on A's page, then a password changed on A's page")
    user = users(1)[0]
    browser = Browser(ports["A"])
    browser.sign_in(user.username, PASSWORD)
    secret = browser.app_password("hosts soak")
    revoked_id = AppPassword.objects.get(user=user, name="hosts soak").pk
    probes = credentials_of(user, ports, secret)
    assert warmed(probes, ports), "the app password did not work on both hosts"
    revoke = browser.go("POST", f"/account/app-passwords/{revoked_id}/revoke/", {})
    assert revoke.status == 302, f"the revocation answered {revoke.status}"
    no, asked, wanting = refused(probes, ports)
    print(f"  after the revocation: {no} of {asked} requests refused ({wanting or 'all'})")
    check(
        "app password revoked: refused by both hosts at once",
        f"{no}/{asked} (token, refresh, cookie, gpodder and Nextcloud Basic; A and B)",
        "all",
        no == asked,
    )

    # A password changed: what was signed in with the old one ends.
    user = users(1)[0]
    browser = Browser(ports["A"])
    browser.sign_in(user.username, PASSWORD)
    probes = credentials_of(user, ports, PASSWORD)
    assert warmed(probes, ports), "the password did not work on both hosts"
    access = {"/v1/ access token": probes.pop("/v1/ access token")}
    changed = browser.go(
        "POST",
        "/account/password/",
        {"old_password": PASSWORD, "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
    )
    at = time.monotonic()
    assert changed.status == 302, f"the password change answered {changed.status}"
    first = statuses(access, ports)  # the old access token first, at once
    lag: dict[str, float] = {}  # then, beside the other probes, until each host refuses it

    def poll() -> None:
        while len(lag) < len(ports) and time.monotonic() < at + AUTH_CACHE + 10:
            for host, port in ports.items():
                started = time.monotonic()
                if host not in lag and refused(access, {host: port})[0] == TRIES:
                    lag[host] = started - at
            time.sleep(0.1)

    poller = threading.Thread(target=poll)
    poller.start()
    no, asked, wanting = refused(probes, ports)
    print(f"  the other probes were sent within {time.monotonic() - at:.1f} s of the change")
    poller.join()
    new = basic(user.username, NEW_PASSWORD)
    works = [
        request(
            port, "GET", f"/api/2/subscriptions/{user.username}/new.json?since=0", headers=new
        ).status
        for port in ports.values()
    ]
    print(
        f"  after the change: {no} of {asked} requests refused ({wanting or 'all'}); "
        f"the new password answered {works}"
    )
    check(
        "password changed: cookie, refresh token, old Basic refused by both at once",
        f"{no}/{asked} (refresh, cookie, gpodder and Nextcloud Basic; A and B)",
        "all",
        no == asked and works == [200, 200],
    )
    at_once = {h: sum(s in REFUSED for s in first[f"/v1/ access token on {h}"]) for h in ports}
    until = ", ".join(f"{h} {lag[h]:.1f} s" if h in lag else f"{h} never" for h in ports)
    check(
        "password changed: old /v1/ access token refused",
        "at once "
        + ", ".join(f"{h} {n}/{TRIES}" for h, n in at_once.items())
        + f"; all by {until}",
        "at once on both hosts (all refused on the first tries on A and B)",
        all(n == TRIES for n in at_once.values()),
    )
    if any(n < TRIES for n in at_once.values()):
        print(
            "  NOTE, not at once: a web process that remembers the user (accounts."
            "authentication.active_users) took an access token of the old password after the "
            "change: it did not hear the change's announcement (accounts.invalidation), or "
            "trusted its cache while not subscribed; see the hosts' logs"
        )


# --- 3. the load, A killed, deletions, feed checks, beat ---------------------------------------


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


# --- 4. the throttle -------------------------------------------------------------------------


def throttles(ports: dict[str, int], nginx: Nginx) -> None:
    rate = THROTTLE_RATE
    # Each web process may hold up to half the rate unsent (docs/api.md, "Throttling").
    bound = rate + len(ports) * WORKERS * rate // 2
    # One request at a time, what the processes hold unsent is a few requests: at most half as
    # many again. Many at once, they hold what each counted in its last interval: the count of
    # both hosts together must still stay under what two hosts counting alone would allow.
    limit, twice = rate * 3 // 2, 2 * rate
    print(f"\n4. throttle at {rate}/min per user, both hosts started again with it")
    alternate, concurrent = users(2)

    def token(user: Any) -> str:
        body = {"username": user.username, "password": PASSWORD}
        return str(request(ports["A"], "POST", "/v1/auth/login", body).json()["access_token"])

    # One request at a time, A and B in turn.
    first, refused = token(alternate), None
    allowed = 0
    for n in range(2 * rate):
        answer = request(
            list(ports.values())[n % 2],
            "GET",
            "/v1/subscriptions?per_page=1",
            headers=bearer(first),
        )
        allowed += answer.status == 200
        if answer.status == 429 and refused is None:
            refused = answer
    check(
        "throttle: one user, A and B in turn",
        f"{allowed} of {2 * rate} allowed",
        f"{rate} to {limit} (documented bound {bound})",
        rate <= allowed <= limit,
    )
    message = (refused.json() or {}).get("message", "") if refused else ""
    retry_after = refused.headers.get("retry-after", "") if refused else ""
    print(f"  429: {message!r}, Retry-After {retry_after}")
    check(
        "throttle: the 429 names the limit",
        repr(message),
        f"'{rate}/min requests per user', Retry-After",
        f"{rate}/min requests per user" in message and retry_after.isdigit(),
    )

    # Eight at once, four on each host.
    second, lock, counted = token(concurrent), threading.Lock(), Counter[int]()

    def send(port: int) -> None:
        for _ in range(rate // 2):
            status = request(
                port, "GET", "/v1/subscriptions?per_page=1", headers=bearer(second)
            ).status
            with lock:
                counted[status] += 1

    senders = [threading.Thread(target=send, args=(p,)) for p in list(ports.values()) * 4]
    for thread in senders:
        thread.start()
    for thread in senders:
        thread.join()
    check(
        "throttle: one user, 8 clients at once on A and B",
        f"{counted[200]} of {sum(counted.values())} allowed ({counted[200] / rate:.2f} x rate)",
        f"{rate} to {twice - 1} (documented bound {bound})",
        rate <= counted[200] < twice,
    )

    # Anonymous requests through nginx, counted per client address: the one nginx puts in
    # X-Forwarded-For (NUM_PROXIES=1), not nginx's own, nor one the client forges.
    anonymous = 0
    for n in range(2 * rate):
        forged = {"X-Forwarded-For": f"198.51.100.{n % 250}"}
        answer = request(nginx.port, "GET", "/v1/capabilities", headers=forged, source="127.0.0.2")
        anonymous += answer.status == 200
    other = request(nginx.port, "GET", "/v1/capabilities", source="127.0.0.3").status
    check(
        "throttle: anonymous via nginx, forged X-Forwarded-For",
        f"{anonymous} of {2 * rate} allowed; another client address: {other}",
        f"{rate} to {limit}; 200",
        rate <= anonymous <= limit and other == 200,
    )


# --- main ----------------------------------------------------------------------------------


def table() -> None:
    width = max(len(name) for name, *_ in ROWS)
    print(f"\n| {'check':<{width}} | measured | target | met |\n|{'-' * (width + 2)}|---|---|---|")
    for name, measured, target, met in ROWS:
        print(f"| {name:<{width}} | {measured} | {target} | {'met' if met else 'MISSED'} |")


@contextmanager
def stopped_on_sigterm() -> Iterator[None]:
    """SIGTERM (a CI timeout, `kill`) ends the run through its `finally` blocks, which stop
    every process it started."""
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main() -> int:
    began = time.monotonic()
    logs = Path(tempfile.mkdtemp(prefix="opa-hosts-"))
    print(f"soak-hosts: logs in {logs}", flush=True)
    with (
        stopped_on_sigterm(),
        servers.postgres() as pg,
        servers.pgbouncer(pg) as bouncer,
        servers.redis() as redis_server,
    ):
        env = django_on(
            pg,
            redis_server,
            "opa_hosts",
            # Through the pooler, as a large deployment runs (migrated through it too).
            DATABASE_URL=f"postgres://postgres@{bouncer.host}:{bouncer.port}/opa_hosts",
            DATABASE_POOL_MODE="transaction",
            NUM_PROXIES="1",
            THROTTLE_LOGIN_RATE="100000/min",  # the checks send wrong passwords on purpose
            FEED_CHECK_INTERVAL=str(FEED_INTERVAL),
            FEED_FETCH_ALLOWED_NETWORKS="127.0.0.0/8",
            DELETION_SWEEP_INTERVAL=str(SWEEP_INTERVAL),
            # A deletion whose message died with A is sent again by the sweep after this.
            DELETION_RESEND_AFTER="15",
            AUTH_USER_CACHE_SECONDS=str(AUTH_CACHE),
        )
        from django.db import connection

        feeds = FeedServer()
        a = Gunicorn("config.wsgi", env, logs / "host-a.log")
        b = Gunicorn("config.wsgi", env, logs / "host-b.log")
        nginx = Nginx([a.port, b.port], logs / "nginx")
        worker_env = {**env, "LOG_LEVEL": "INFO"}  # the task results are counted in the logs
        worker_logs = [logs / "worker-1.log", logs / "worker-2.log"]
        first, second = (servers.Worker(worker_env, log) for log in worker_logs)
        with running(feeds, nginx, a, b, first, second):
            a.start()
            b.start()
            nginx.start()
            first.start(beat=True, name="worker-1")
            second.start(beat=False, name="worker-2")
            ports = {"A": a.port, "B": b.port}
            print(
                f"hosts A :{a.port}, B :{b.port} ({WORKERS} web workers each), nginx "
                f":{nginx.port}, PgBouncer :{bouncer.port}, PostgreSQL :{pg.port}",
                flush=True,
            )

            added = read_your_writes(ports, feeds)
            revocation(ports)
            ledger, burst_times = load(nginx, a, env, feeds)
            connection.close()
            acknowledged(ledger)
            all_done = drained(env, 120)
            print(f"  feed checks {'all run' if all_done else 'STILL RUNNING after 120 s'}")
            added += [url for _, url in ledger.added + ledger.uploaded]
            feed_checks_once(feeds, burst_times, added)
            first.stop()  # warm shutdown: the tasks under way end, and their results are logged
            second.stop()
            deletions_once(worker_logs)
            beat_once(worker_logs)

            # The throttle's rate is a setting of the web processes: both hosts start again.
            for host in (a, b):
                host.stop()
                host.env = {**env, "THROTTLE_USER_RATE": f"{THROTTLE_RATE}/min"}
                host.start()
            throttles(ports, nginx)
            connection.close()
    table()
    print(f"\nThe whole run: {time.monotonic() - began:.0f} s; logs in {logs}")
    missed = [name for name, *_, met in ROWS if not met]
    print(
        f"\n{len(ROWS) - len(missed)} of {len(ROWS)} checks met"
        + (f"; missed: {', '.join(missed)}" if missed else "")
    )
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
