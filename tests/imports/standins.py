"""Servers an import reads from, on loopback: one shaped like gpodder.net's answers (written from
mygpo's source: mygpo/api/advanced/__init__.py and auth.py at e2642086), and hostile ones."""

import base64
import contextlib
import http.server
import json
import ssl
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

import trustme

USER, PASSWORD = "carol", "carol's password"
# mygpo answers at most MAX_EPISODE_ACTIONS (1,000) a request; a few here, so that paging shows.
PAGE = 3


class Mygpo:
    """gpodder.net's API as mygpo answers it: Basic on every request (401 with a realm
    otherwise), the devices with their caption, type and subscription count, each device's
    subscriptions since 0, and the episode actions by their own timestamp, oldest first, PAGE
    at a time, `timestamp` the last one's (or now, when none)."""

    def __init__(self) -> None:
        self.devices = [
            {"id": "n900", "caption": "Carol's N900", "type": "mobile"},
            {"id": "desktop", "caption": "gPodder on the desk", "type": "desktop"},
        ]
        self.subscriptions = {
            "n900": [
                "HTTPS://Feeds.Example.com/show.xml/",
                "https://other.example.org/podcast/rss",
            ],
            "desktop": ["https://feeds.example.com/show.xml"],
        }
        self.actions: list[dict[str, Any]] = [
            {
                "podcast": "https://feeds.example.com/show.xml",
                "episode": f"https://cdn.example.com/show/{n}.mp3",
                "guid": None if n % 2 else f"guid-{n}",
                "action": "play" if n % 3 else "download",
                # naive, with microseconds: mygpo's history.timestamp.isoformat()
                "timestamp": datetime(2012, 5, 1 + n, 8, 30, 15, 250000).isoformat(),
                "device": "n900" if n % 2 else "desktop",
                **({"started": 0, "position": 60 * n, "total": 3600} if n % 3 else {}),
            }
            for n in range(8)
        ]

    def answer(self, method: str, path: str, query: dict[str, list[str]]) -> Any:
        if path == f"/api/2/auth/{USER}/login.json" and method == "POST":
            return ""
        if path == f"/api/2/devices/{USER}.json":
            return [{**d, "subscriptions": len(self.subscriptions[d["id"]])} for d in self.devices]
        for device in self.subscriptions:
            if path == f"/api/2/subscriptions/{USER}/{device}.json":
                return {"add": self.subscriptions[device], "remove": [], "timestamp": 1700000000}
        if path == f"/api/2/episodes/{USER}.json":
            since = datetime.fromtimestamp(int(query.get("since", ["0"])[0]), UTC)
            found = [
                a
                for a in self.actions
                if datetime.fromisoformat(a["timestamp"]).replace(tzinfo=UTC) >= since
            ][:PAGE]
            last = (
                datetime.fromisoformat(found[-1]["timestamp"]).replace(tzinfo=UTC)
                if found
                else datetime.now(UTC)
            )
            return {"actions": found, "timestamp": int(last.timestamp())}
        return None


class Handler(http.server.BaseHTTPRequestHandler):
    server: "StandIn"

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.server.requests.append(f"{self.command} {self.path}")
        getattr(self, f"_{self.server.behaviour}")()

    do_POST = do_GET

    def _send(
        self, status: int, body: bytes, kind: str = "application/json", **headers: str
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)

    def _authorized(self) -> bool:
        expected = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
        if self.headers.get("Authorization") == f"Basic {expected}":
            return True
        self._send(401, b"", "text/plain", WWW_Authenticate='Basic realm=""')
        return False

    def _mygpo(self) -> None:
        if not self._authorized():
            return
        parts = urlsplit(self.path)
        if parts.path in self.server.bodies:
            self._send(200, self.server.bodies[parts.path])
            return
        found = self.server.mygpo.answer(self.command, parts.path, parse_qs(parts.query))
        if found is None:
            self._send(404, b"Not Found", "text/html")
        else:
            self._send(200, b"" if found == "" else json.dumps(found).encode())

    def _mygpo_slow(self) -> None:
        """mygpo taking its time over the episode actions: an import's page seen under way."""
        if urlsplit(self.path).path.startswith("/api/2/episodes/"):
            time.sleep(4)
        self._mygpo()

    def _devices_500(self) -> None:
        """A server that fails on the device list (an error page naming nothing of ours)."""
        if "/api/2/devices/" in self.path:
            self._send(500, b"Internal Server Error", "text/plain")
        else:
            self._mygpo()

    def _nextcloud(self) -> None:
        """The Nextcloud gPodder Sync app (nextcloud-gpodder), reached at /index.php/apps/...:
        no gpodder API (404 on its login), and a play's missing fields kept as -1."""
        if not self._authorized():
            return
        path = urlsplit(self.path).path
        if path == "/index.php/apps/gpoddersync/subscriptions":
            body = {"add": ["https://feeds.example.com/show.xml"], "remove": [], "timestamp": 5}
            self._send(200, json.dumps(body).encode())
        elif path == "/index.php/apps/gpoddersync/episode_action":
            actions = [
                {"podcast": "https://feeds.example.com/show.xml", "guid": "g1",
                 "episode": "https://cdn.example.com/1.mp3", "action": "DOWNLOAD",
                 "timestamp": "2020-02-02T02:02:02", "started": -1, "position": -1, "total": -1},
                {"podcast": "https://feeds.example.com/show.xml", "guid": "g2",
                 "episode": "https://cdn.example.com/2.mp3", "action": "PLAY",
                 "timestamp": "2020-02-02T03:03:03", "started": 0, "position": 90, "total": -1},
            ]  # fmt: skip
            self._send(200, json.dumps({"actions": actions, "timestamp": 5}).encode())
        else:
            self._send(404, b"<html>Page not found</html>", "text/html")

    def _unauthorized(self) -> None:
        self._send(401, b"", "text/plain", WWW_Authenticate='Basic realm=""')

    def _html(self) -> None:
        self._send(200, b"<!DOCTYPE html><html><body>Welcome to my blog</body></html>", "text/html")

    def _wrong_shape(self) -> None:
        parts = urlsplit(self.path)
        if parts.path.endswith("/login.json"):
            self._send(200, b"")
        else:
            self._send(200, json.dumps({"devices": "none here"}).encode())

    def _redirect_private(self) -> None:
        self._send(302, b"", "text/plain", Location="http://10.1.2.3/api/2/auth/carol/login.json")

    def _nul_status(self) -> None:
        """A status line holding a NUL, which the import's error quotes."""
        self.wfile.write(b"HTTP/1.1 2\x0000 OK\r\nContent-Length: 0\r\n\r\n")

    def _nul_redirect(self) -> None:
        """A redirect elsewhere, its address holding a NUL and a terminal's escape."""
        self.wfile.write(
            b"HTTP/1.1 302 Found\r\nLocation: http://elsewhere.example/\x00\x1b[31m\r\n"
            b"Content-Length: 0\r\n\r\n"
        )

    def _huge(self) -> None:
        if urlsplit(self.path).path.endswith("/login.json"):
            self._send(200, b"")
            return
        size = 50 * 1024 * 1024
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(size))
        self.end_headers()
        chunk = b" " * 65536
        with contextlib.suppress(OSError):
            for _ in range(size // len(chunk)):
                self.wfile.write(chunk)

    def _drip(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        with contextlib.suppress(OSError):
            for _ in range(200):
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(0.1)

    def _two_million(self) -> None:
        path = urlsplit(self.path).path
        if path.endswith("/login.json"):
            self._send(200, b"")
        elif path.startswith("/api/2/devices/"):
            self._send(200, b'[{"id": "phone", "caption": "", "type": "mobile"}]')
        elif path.startswith("/api/2/subscriptions/"):
            self._send(200, b'{"add": ["https://feeds.example.com/a.xml"], "remove": []}')
        else:
            items = b",".join([b"{}"] * 2_000_000)
            self._send(200, b'{"actions": [' + items + b'], "timestamp": 5}')


class StandIn(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, behaviour: str, host: str = "127.0.0.1") -> None:
        super().__init__((host, 0), Handler)
        self.behaviour = behaviour
        self.mygpo = Mygpo()
        # Answers sent as they are instead of mygpo's, by path: made before the import starts,
        # and sent without a copy, so that a test measuring the import's memory measures it.
        self.bodies: dict[str, bytes] = {}
        self.requests: list[str] = []

    scheme = "http"

    @property
    def url(self) -> str:
        host, port = str(self.server_address[0]), self.server_address[1]
        return f"{self.scheme}://{host}:{port}"


@contextlib.contextmanager
def standin(behaviour: str, *, tls: bool = False, host: str = "127.0.0.1") -> Iterator[StandIn]:
    """`tls`: over HTTPS, with a certificate of a CA nobody trusts (trustme's); `host`: the
    address it listens on."""
    server = StandIn(behaviour, host)
    if tls:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        trustme.CA().issue_cert("127.0.0.1").configure_cert(context)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        server.scheme = "https"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
