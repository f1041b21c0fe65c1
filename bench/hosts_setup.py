"""What `make soak-hosts` (bench/hosts.py) runs on: its knobs, its table of checks, requests on
a new connection each and a person's browser, and the processes it starts beside the
service: nginx and a feed server."""

import http.client
import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from base64 import b64encode
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from bench.harness import Gunicorn
from bench.soak import PASSWORD
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
