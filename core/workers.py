"""The gunicorn worker the service runs in (config/gunicorn.py): gunicorn's threaded worker,
with a bound on how long a client may keep the worker waiting (docs/operations.md, "Slow and
vanished clients").

gunicorn's gthread worker hands a connection to one of its few threads as soon as it opens, and
the thread then waits on the socket for as long as the client takes. A phone that lost its
network half-way through a request (no FIN, no RST reaches the server), or anyone sending half a
request and nothing more, held a thread for good: four of them, and the home server (one
process of four threads) answered nobody until it was restarted. And once a request was
answered with the connection to close, the worker's main loop waited up to 2 s for the client
to close its side, answering no one meanwhile: a client that sent such requests and never
closed kept the whole worker waiting.

So here:
- a request's head is taken as it arrives, without waiting, and handed to gunicorn's parser
  only once it is whole: until then the connection waits in the worker's poller, holding no
  thread, and a head not whole within CLIENT_TIMEOUT seconds is answered 408, with the error
  object, and the connection closed (one over 64 KiB, 431);
- once the head is in, reading the body and writing the answer fail when the client moves
  nothing for CLIENT_TIMEOUT seconds (the socket's SO_RCVTIMEO and SO_SNDTIMEO), and the body
  when it comes slower than 500 bytes a second past its first CLIENT_TIMEOUT (_paced), which
  frees the thread; a body too late is a 408 too (api.errors.body_not_received);
- a connection that ends is closed from the poller, which reads what the client still sends
  (so that the close does not reset the connection under the answer) without holding a thread
  or the main loop.
"""

import contextlib
import json
import selectors
import socket
import struct
import time
from collections import deque
from concurrent.futures import Future
from functools import partial
from typing import Any

from gunicorn.http2 import negotiation
from gunicorn.workers import gthread

# The largest head taken (nginx takes 32 KiB by default; a head is 0.5 to 2 KiB).
_HEAD_BYTES = 64 * 1024


def _whole(head: bytes) -> bool:
    return b"\r\n\r\n" in head or b"\n\n" in head


# Bytes a second a body must come at, past its first CLIENT_TIMEOUT seconds (Apache's MinRate).
_BODY_MIN_RATE = 500
# What a connection's next head is.
_WAITING, _WHOLE, _TOO_LARGE, _GONE = object(), object(), object(), object()
# At most how long and how much a closing connection reads of what the client still sends
# (gunicorn's own bounds).
_LINGER_SECONDS = 2.0
_LINGER_BYTES = 64 * 1024


class ThreadWorker(gthread.ThreadWorker):
    client_timeout = 30.0  # config/gunicorn.py sets it from CLIENT_TIMEOUT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lingering: deque[Any] = deque()  # closing connections, by when they close at last

    def enqueue_req(self, conn: Any) -> None:
        if not hasattr(conn, "head_since"):  # a new connection
            conn.head, conn.head_since = b"", None
            seconds = int(self.client_timeout)
            bound = struct.pack("ll", seconds, int((self.client_timeout - seconds) * 1_000_000))
            conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, bound)
            conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, bound)
        super().enqueue_req(conn)

    def handle(self, conn: Any) -> Any:
        result = self._handle(conn)
        if result is gthread._DEFER and not self.alive:
            result = False  # stopping: gunicorn would take it for a kept-alive connection
        if result is False:  # the connection ends: the answer is followed by FIN at once
            conn.closing = True
            with contextlib.suppress(OSError):
                conn.sock.shutdown(socket.SHUT_WR)
        return result

    def _handle(self, conn: Any) -> Any:
        if self._reads_heads(conn):
            head = self._take_head(conn)
            if head is _WAITING:
                now = time.monotonic()
                if conn.head and conn.head_since is None:
                    conn.head_since = now  # its first bytes
                if conn.head_since is not None and now - conn.head_since > self.client_timeout:
                    self._refuse(conn, "408 Request Timeout", self._late_head())
                    return False
                return gthread._DEFER  # back to the poller until more arrives
            if head is _TOO_LARGE:
                self._refuse(
                    conn, "431 Request Header Fields Too Large",
                    f"Request header fields too large: the request's head is over {_HEAD_BYTES} "
                    "bytes",
                )  # fmt: skip
                return False
            if head is _GONE:
                return False
        conn.head_since = None
        return super().handle(conn)

    def _reads_heads(self, conn: Any) -> bool:
        """Whether this worker takes the connection's heads itself: not over TLS or HTTP/2
        (neither is served here: the proxy in front speaks them), whose first bytes are not a
        head."""
        return not (self.cfg.is_ssl or negotiation.prior_knowledge_allowed(self.cfg, conn.client))

    def _take_head(self, conn: Any) -> object:
        """Take what has arrived of the next request's head, without waiting: what gunicorn
        read ahead of it (the client sent it behind the last request), then the socket's. Once
        it is whole, it goes (with whatever came after it) to gunicorn's parser, as if the
        parser had read it, and _WHOLE is returned; else _WAITING, _TOO_LARGE or _GONE."""
        if conn.parser is not None:
            conn.head += conn.parser.unreader.take_buffered()
        if not _whole(conn.head):
            if len(conn.head) > _HEAD_BYTES:
                return _TOO_LARGE
            try:
                data = conn.sock.recv(_HEAD_BYTES + 1 - len(conn.head), socket.MSG_DONTWAIT)
            except BlockingIOError:
                return _WAITING
            except OSError:
                return _GONE
            if not data:
                return _GONE  # the client closed before its head was whole
            conn.head += data
            if not _whole(conn.head):
                return _TOO_LARGE if len(conn.head) > _HEAD_BYTES else _WAITING
        if conn.parser is None:
            conn.init()
        conn.parser.unreader.unread(conn.head)
        conn.head, conn.data_ready = b"", True
        return _WHOLE

    def _late_head(self) -> str:
        return (
            f"Request timeout: the request's head did not arrive whole within "
            f"{self.client_timeout:g} s (CLIENT_TIMEOUT), or stopped for {self.cfg.keepalive} s"
        )

    def _refuse(self, conn: Any, status: str, message: str) -> None:
        body = json.dumps({"code": status[:3], "message": message}).encode()
        head = (
            f"HTTP/1.1 {status}\r\nConnection: close\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode()
        self.log.info("%s: %s", conn.client, message)
        # The client may have gone, or read nothing: then nobody is left to read it.
        with contextlib.suppress(OSError):
            conn.sock.send(head + body, socket.MSG_DONTWAIT)

    def handle_request(self, req: Any, conn: Any) -> bool:
        unreader = conn.parser.unreader
        unreader.chunk = _paced(unreader, self.client_timeout)
        try:
            return bool(super().handle_request(req, conn))
        except BlockingIOError:  # the socket's bound: the client moved nothing meanwhile
            self.log.info(
                "%s: the client moved nothing for %g s (CLIENT_TIMEOUT) while %s %s was "
                "answered, and its connection was closed",
                conn.client, self.client_timeout, req.method, req.path,
            )  # fmt: skip
            return False
        finally:
            del unreader.chunk

    def finish_request(self, conn: Any, fs: Future[Any]) -> None:
        if getattr(conn, "closing", False):
            self._linger(conn)
        else:
            super().finish_request(conn, fs)

    def murder_pending(self) -> None:
        """gunicorn closes a connection left silent for its keep-alive time (5 s); one that
        stopped half-way through a head is told why first. And the closing connections whose
        time is up are closed."""
        now = time.monotonic()
        for conn in self.pending_conns:
            if conn.timeout > now:
                break
            if conn.head:
                self._refuse(conn, "408 Request Timeout", self._late_head())
        super().murder_pending()
        while self.lingering and self.lingering[0].timeout <= now:
            self._closed(self.lingering[0])

    def _linger(self, conn: Any) -> None:
        """Close after the answer (RFC 9112, section 9.6) without holding a thread or the main
        loop: read what the client still sends, so that the close does not reset the
        connection while the answer may be unread, as the poller finds it, until the client
        closes its side, or for _LINGER_SECONDS and _LINGER_BYTES at most."""
        conn.timeout, conn.drained = time.monotonic() + _LINGER_SECONDS, 0
        self.lingering.append(conn)
        try:
            conn.sock.setblocking(False)
            self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._drain, conn))
        except (OSError, ValueError, KeyError):
            self._closed(conn)

    def _drain(self, conn: Any, sock: socket.socket) -> None:
        try:
            data = sock.recv(4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        conn.drained += len(data)
        if not data or conn.drained >= _LINGER_BYTES:
            self._closed(conn)

    def _closed(self, conn: Any) -> None:
        self.lingering.remove(conn)
        with contextlib.suppress(OSError, ValueError, KeyError):
            self.poller.unregister(conn.sock)
        conn.close()
        self.nr_conns -= 1


def _paced(unreader: Any, client_timeout: float) -> Any:
    """The unreader's reads of a request's body, bounded in all as Apache's mod_reqtimeout
    bounds them: CLIENT_TIMEOUT seconds, and one more for every _BODY_MIN_RATE bytes received.
    Each read is bounded by CLIENT_TIMEOUT already (SO_RCVTIMEO); without this, a client that
    sent a byte just before each bound ran out would hold its thread for as long as it liked."""
    read = type(unreader).chunk
    started, received = time.monotonic(), 0

    def chunk(size_hint: int | None = None) -> bytes:
        nonlocal received
        if time.monotonic() - started > client_timeout + received / _BODY_MIN_RATE:
            raise TimeoutError(
                f"the body came slower than {_BODY_MIN_RATE} bytes a second after "
                f"{client_timeout:g} s (CLIENT_TIMEOUT)"
            )
        data = read(unreader, size_hint)
        received += len(data)
        return data

    return chunk
