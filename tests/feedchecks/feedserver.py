"""A real HTTP server in a thread, serving what each test sets up, and counting connections."""

import http.server
import select
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from tests.helpers import billion_laughs

Route = Callable[[http.server.BaseHTTPRequestHandler], None]

GUID = "917393e3-1b1e-5cef-ace4-edaa54e1f810"


def rss(
    *, guid: str | None = None, new_feed_url: str | None = None, prefix: str = "podcast"
) -> bytes:
    """A small podcast feed, with the podcast and iTunes namespaces."""
    channel = "<title>A show</title>"
    if guid is not None:
        channel += f"<{prefix}:guid>{guid}</{prefix}:guid>"
    if new_feed_url is not None:
        channel += f"<itunes:new-feed-url>{new_feed_url}</itunes:new-feed-url>"
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd" '
        f'xmlns:{prefix}="https://podcastindex.org/namespace/1.0">'
        f"<channel>{channel}<item><title>Episode 1</title></item></channel></rss>"
    ).encode()


BILLION_LAUGHS = billion_laughs(
    '<rss version="2.0" xmlns:podcast="https://podcastindex.org/namespace/1.0">\n'
    f"<channel><title>&lol9;</title><podcast:guid>{GUID}</podcast:guid>\n"
    "</channel></rss>"
)


class FeedServer:
    """Serves routes set by the test on `host`; `connections` counts every TCP connection."""

    def __init__(self, host: str = "127.0.0.1"):
        self.host = host
        self.routes: dict[str, Route] = {}
        self.connections = 0
        self.requests: list[str] = []
        self.bytes_sent = 0
        self.drips: list[tuple[float, float]] = []
        self.stopped = threading.Event()  # ends the drips still going
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                server.requests.append(self.path)
                route = server.routes.get(self.path)
                if route is None:
                    self.send_error(404)
                    return
                route(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        class Server(http.server.ThreadingHTTPServer):
            address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
            daemon_threads = True

            def verify_request(self, request: Any, client_address: Any) -> bool:
                server.connections += 1
                return True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that hung up on purpose

        self.server = Server((host, 0), Handler)
        self.port = self.server.server_address[1]
        # A short poll: stop() waits for the loop to see it, half a second by default.
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def start(self) -> "FeedServer":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopped.set()
        self.server.shutdown()
        self.server.server_close()

    def url(self, path: str) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{path}"

    # --- routes ---------------------------------------------------------------------------

    def feed(self, path: str, body: bytes, *, status: int = 200) -> None:
        def route(handler: http.server.BaseHTTPRequestHandler) -> None:
            handler.send_response(status)
            handler.send_header("Content-Type", "application/rss+xml")
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)

        self.routes[path] = route

    def redirect(self, path: str, to: str, *, status: int = 301) -> None:
        def route(handler: http.server.BaseHTTPRequestHandler) -> None:
            handler.send_response(status)
            handler.send_header("Location", to)
            handler.send_header("Content-Length", "0")
            handler.end_headers()

        self.routes[path] = route

    def raw(self, path: str, data: bytes) -> None:
        """Answers `data` as it is, status line and all, then hangs up."""

        def route(handler: http.server.BaseHTTPRequestHandler) -> None:
            handler.close_connection = True
            handler.wfile.write(data)

        self.routes[path] = route

    def huge(self, path: str, size: int) -> None:
        """A feed of `size` bytes, sent as fast as the client reads; counts what got out."""

        def route(handler: http.server.BaseHTTPRequestHandler) -> None:
            handler.send_response(200)
            handler.send_header("Content-Type", "application/rss+xml")
            handler.send_header("Content-Length", str(size))
            handler.end_headers()
            head = rss(guid=GUID)[: -len(b"</channel></rss>")]
            handler.wfile.write(head)
            self.bytes_sent += len(head)
            chunk = b"<item><title>x</title></item>" * 2000
            left = size - len(head)
            try:
                while left > 0:
                    piece = chunk[:left]
                    handler.wfile.write(piece)
                    self.bytes_sent += len(piece)
                    left -= len(piece)
            except OSError:
                return

        self.routes[path] = route

    def drip(
        self,
        path: str,
        *,
        headers_too: bool = False,
        every: float = 0.1,
        close: bool = False,
        seconds: float = 60,
    ) -> None:
        """A server that sends one byte at a time, never pausing long enough for a read timeout,
        for `seconds` at most (or until the client hangs up, or the server stops).

        `close` says `Connection: close`, as many servers do: http.client then drops its
        connection's socket and reads on through the response alone. `headers_too` drips the
        status line and headers too; else they come at once and the body drips. Each drip's
        start and end (time.monotonic()) are appended to `drips` when it ends: its end is when
        the client hung up, if it did.
        """
        head = b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n"
        head += b"Connection: close\r\n\r\n" if close else b"\r\n"

        def route(handler: http.server.BaseHTTPRequestHandler) -> None:
            handler.close_connection = True
            data = rss(guid=GUID) * 1000
            if headers_too:
                data = head + data
            started = time.monotonic()
            end = started + seconds
            try:
                if not headers_too:
                    handler.wfile.write(head)
                for byte in data:
                    if time.monotonic() > end or self.stopped.is_set():
                        return
                    # Readable means the client hung up (it sends nothing more): stop at once.
                    if select.select([handler.connection], [], [], every)[0]:
                        return
                    handler.wfile.write(bytes([byte]))
                    handler.wfile.flush()
            except OSError:
                return  # the client is gone
            finally:
                self.drips.append((started, time.monotonic()))

        self.routes[path] = route
