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
- once the head is in, its body is received the same way, in the poller, and the request goes
  to a thread only once the body is whole (core.wire): a body over its path's limit is answered
  413 at once and drained in the poller for a moment (so the client, still sending, can read the
  answer), and one that stops for CLIENT_TIMEOUT seconds, or comes slower than 500 bytes a
  second past its first CLIENT_TIMEOUT, is answered 408; the limits and the answers are the
  service's (body_rules, set by config/gunicorn.py);
- writing the answer fails when the client takes nothing for CLIENT_TIMEOUT seconds (the
  socket's SO_SNDTIMEO), or takes it slower than 4 KiB a second past its first CLIENT_TIMEOUT
  (core.wire), which frees the thread;
- a connection that ends is closed from the poller, which reads what the client still sends
  (so that the close does not reset the connection under the answer) without holding a thread
  or the main loop.
"""

import contextlib
import importlib
import json
import selectors
import socket
import struct
import time
from concurrent.futures import Future
from functools import partial
from types import ModuleType
from typing import Any

from gunicorn.http2 import negotiation
from gunicorn.workers import gthread

from core import wire

# At most this many bodies past core.wire.LARGE_BODY (only the history import's may be one,
# docs/imports.md) are received at once by a worker: whoever sends them, before the service
# can tell who it is, holds no more of its disk.
_LARGE_AT_ONCE = 2
# What a connection's next head is.
_WAITING, _WHOLE, _TOO_LARGE, _GONE = object(), object(), object(), object()
# A head whose body the poller receives before a thread takes the request (gunicorn's _DEFER
# for heads).
_RECEIVING = object()
# At most how long and how much a closing connection reads of what the client still sends
# (gunicorn's own bounds).
_LINGER_SECONDS = 2.0
_LINGER_BYTES = 64 * 1024


class ThreadWorker(gthread.ThreadWorker):
    client_timeout = 30.0  # config/gunicorn.py sets it from CLIENT_TIMEOUT
    # The module that says what a body may be and how it is refused (body_limit, body_refusal,
    # body_discard_bytes): the service's, imported once the app is loaded (config/gunicorn.py).
    # Without one, a body is read by the thread that serves its request.
    body_rules: str | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lingering: list[Any] = []  # closing connections
        self.receiving: set[Any] = set()  # connections whose body the poller receives
        self.large: set[Any] = set()  # those of them past wire.LARGE_BODY
        self._rules: ModuleType | None = None

    @property
    def rules(self) -> ModuleType | None:
        if self._rules is None and self.body_rules:
            self._rules = importlib.import_module(self.body_rules)
        return self._rules

    def enqueue_req(self, conn: Any) -> None:
        if not hasattr(conn, "head_since"):  # a new connection
            conn.head, conn.head_since, conn.body, conn.continued = b"", None, None, False
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
        if conn.body is not None:  # received whole by the poller
            wire.source_of(conn, self.client_timeout).received.extend(conn.body.parts())
            conn.body = None
            return self._served(conn)
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
                    "Request header fields too large: the request's head is over "
                    f"{wire.HEAD_BYTES} bytes",
                )  # fmt: skip
                return False
            if head is _GONE:
                return False
            conn.head_since = None
            return self._with_body(conn)
        return self._served(conn)

    def _served(self, conn: Any) -> Any:
        """gunicorn serves the request; what the poller received past its body is the next
        request's, read before the socket's."""
        result = super().handle(conn)
        source = getattr(conn, "source", None)
        if source is not None and source.received:
            if result:
                conn.parser.unreader.unread(source.take_received())
            else:
                source.close()  # its temporary file's disk, now and not at a collection
        return result

    def _with_body(self, conn: Any) -> Any:
        """The head is whole: hand it to gunicorn's parser, with its body once the poller has
        received it whole (_RECEIVING until then), or refused at once when it is over its
        path's limit."""
        whole, conn.head = conn.head, b""
        end = wire.head_end(whole)
        framing = wire.framing(whole[:end]) if self.rules is not None else None
        if conn.parser is None:
            conn.init()
            wire.source_of(conn, self.client_timeout).received_here = self.rules is not None
        if framing is None:  # no body, or gunicorn refuses its framing before reading it
            conn.parser.unreader.unread(whole)
            return self._served(conn)
        assert self.rules is not None
        path, length, expects = framing
        limit = self.rules.body_limit(path)[0]
        if length is not None and length > limit:
            self._answer(conn, self.rules.body_refusal(path, "too large"))
            conn.linger = (self.client_timeout, min(length, self.rules.body_discard_bytes()))
            return False
        conn.parser.unreader.unread(whole[:end])
        body = conn.body = wire.Body(path, length, limit)
        if not self._took(conn, whole[end:]):
            body.close()
            conn.body = None
            return False
        conn.continued = expects  # answered here, not by gunicorn once the body is in
        if body.whole:
            return self._handle(conn)
        if expects:  # the client waits for this before it sends the body
            with contextlib.suppress(OSError):
                conn.sock.send(b"HTTP/1.1 100 Continue\r\n\r\n", socket.MSG_DONTWAIT)
        return _RECEIVING

    def _took(self, conn: Any, data: bytes) -> bool:
        """Give the body what arrived of it; False, with the client answered, when it is over
        its limit, no chunked body, or cannot be kept."""
        body = conn.body
        assert self.rules is not None
        try:
            body.take(data)
        except ValueError:
            self._answer(conn, self.rules.body_refusal(body.path, "malformed"))
            return False
        except OSError as exc:  # the disk is full, or a file would pass the process's limit
            self.log.error("%s: a body could not be kept: %s", conn.client, exc)
            self._refuse(
                conn, "503 Service Unavailable",
                f"Service unavailable: this server could not keep the request's body "
                f"({exc.strerror}); send it again later",
            )  # fmt: skip
            return False
        if body.received > body.limit:
            self._answer(conn, self.rules.body_refusal(body.path, "too large"))
            conn.linger = (self.client_timeout, self.rules.body_discard_bytes())
            return False
        return True

    def _receive_in_poller(self, conn: Any) -> None:
        """Wait in the poller for the rest of the body (the main thread's part)."""
        if (
            conn.body.length is not None
            and conn.body.length > wire.LARGE_BODY
            and not self._large(conn)
        ):
            return
        self.receiving.add(conn)
        try:
            conn.sock.setblocking(False)
            self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._receive, conn))
        except (OSError, ValueError, KeyError):
            self.receiving.discard(conn)
            self.large.discard(conn)
            self.nr_conns -= 1
            conn.close()

    def _large(self, conn: Any) -> bool:
        """Whether this large body may be received now: else the client is told to come back,
        and its connection closes."""
        if len(self.large) < _LARGE_AT_ONCE:
            self.large.add(conn)
            return True
        self._refuse(
            conn, "503 Service Unavailable",
            f"Service unavailable: this server is receiving {_LARGE_AT_ONCE} bodies over "
            f"{wire.LARGE_BODY} bytes already; send it again in a minute",
            "Retry-After: 60\r\n",
        )  # fmt: skip
        conn.body.close()
        conn.body = None
        self._close_answered(conn, (self.client_timeout, wire.LARGE_BODY))
        return False

    def _receive(self, conn: Any, sock: socket.socket) -> None:
        body = conn.body
        try:
            data = sock.recv(65536 if body.length is None else min(65536, body.left))
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:  # the client closed, or cut the connection, before its body was whole
            self._end_receiving(conn, "cut short")
            return
        if not self._took(conn, data):
            self._end_receiving(conn, None)
            return
        if body.whole:
            self._stop_receiving(conn)
            self.enqueue_req(conn)  # a thread serves it now
        elif body.length is None and body.received > wire.LARGE_BODY and conn not in self.large:
            self._stop_receiving(conn)
            if self._large(conn):
                self._receive_in_poller(conn)
        elif body.late(time.monotonic(), self.client_timeout):
            self._end_receiving(conn, "late")

    def _stop_receiving(self, conn: Any) -> None:
        self.receiving.discard(conn)
        self.large.discard(conn)
        with contextlib.suppress(OSError, ValueError, KeyError):
            self.poller.unregister(conn.sock)

    def _end_receiving(self, conn: Any, why: str | None) -> None:
        """The body will not be served: answer why (when it is not None, answered already)
        and close."""
        self._stop_receiving(conn)
        if why is not None:
            assert self.rules is not None
            self._answer(conn, self.rules.body_refusal(conn.body.path, why))
            self.log.info(
                "%s: the body of a request to %s was refused (%s) after %d bytes",
                conn.client, conn.body.path, why, conn.body.received,
            )  # fmt: skip
        conn.body.close()
        conn.body = None
        self._close_answered(conn, getattr(conn, "linger", None))

    def _close_answered(self, conn: Any, linger: tuple[float, int] | None) -> None:
        conn.closing, conn.linger = True, linger
        with contextlib.suppress(OSError):
            conn.sock.shutdown(socket.SHUT_WR)
        self._linger(conn)

    def _reads_heads(self, conn: Any) -> bool:
        """Whether this worker takes the connection's heads itself: not over TLS or HTTP/2
        (neither is served here: the proxy in front speaks them), whose first bytes are not a
        head."""
        return not (self.cfg.is_ssl or negotiation.prior_knowledge_allowed(self.cfg, conn.client))

    def _take_head(self, conn: Any) -> object:
        """Take what has arrived of the next request's head, without waiting: what gunicorn
        read ahead of it (the client sent it behind the last request), then the socket's. Once
        it is whole, _WHOLE is returned (conn.head holds it, with whatever came after it);
        else _WAITING, _TOO_LARGE or _GONE."""
        if conn.parser is not None:
            conn.head += conn.parser.unreader.take_buffered()
        if not wire.whole(conn.head):
            if len(conn.head) > wire.HEAD_BYTES:
                return _TOO_LARGE
            try:
                data = conn.sock.recv(wire.HEAD_BYTES + 1 - len(conn.head), socket.MSG_DONTWAIT)
            except BlockingIOError:
                return _WAITING
            except OSError:
                return _GONE
            if not data:
                return _GONE  # the client closed before its head was whole
            conn.head += data
            if not wire.whole(conn.head):
                return _TOO_LARGE if len(conn.head) > wire.HEAD_BYTES else _WAITING
        conn.data_ready = True
        return _WHOLE

    def _late_head(self) -> str:
        return (
            f"Request timeout: the request's head did not arrive whole within "
            f"{self.client_timeout:g} s (CLIENT_TIMEOUT), or stopped for {self.cfg.keepalive} s"
        )

    def _refuse(self, conn: Any, status: str, message: str, headers: str = "") -> None:
        body = json.dumps({"code": status[:3], "message": message}).encode()
        self._send_refusal(conn, status, "application/json", body, headers)
        self.log.info("%s: %s", conn.client, message)

    def _answer(self, conn: Any, response: Any) -> None:
        """Send one of the service's own answers (a Django HttpResponse), the connection to
        close after it."""
        status = f"{response.status_code} {response.reason_phrase}"
        self._send_refusal(conn, status, response["Content-Type"], response.content)

    def _send_refusal(
        self, conn: Any, status: str, content_type: str, body: bytes, headers: str = ""
    ) -> None:
        head = (
            f"HTTP/1.1 {status}\r\nConnection: close\r\n{headers}"
            f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode()
        # The client may have gone, or read nothing: then nobody is left to read it.
        with contextlib.suppress(OSError):
            conn.sock.send(head + body, socket.MSG_DONTWAIT)

    def handle_request(self, req: Any, conn: Any) -> bool:
        source = wire.source_of(conn, self.client_timeout)
        # A body still on the socket (none that the poller received) is read at a pace.
        source.since, source.taken = time.monotonic(), 0
        if conn.continued:  # answered when the body was waited for
            req._expected_100_continue = conn.continued = False
        sock, conn.sock = conn.sock, wire.PacedAnswer(conn.sock, self.client_timeout)
        try:
            return bool(super().handle_request(req, conn))
        except BlockingIOError as exc:  # the socket's bound, or the answer's pace
            self.log.info(
                "%s: the client %s while %s %s was answered, and its connection was closed",
                conn.client,
                exc if isinstance(exc, wire.TooSlow)
                else f"moved nothing for {self.client_timeout:g} s (CLIENT_TIMEOUT)",
                req.method, req.path,
            )  # fmt: skip
            return False
        finally:
            conn.sock, source.since = sock, None

    def finish_request(self, conn: Any, fs: Future[Any]) -> None:
        if getattr(conn, "closing", False):
            self._linger(conn)
        elif not fs.cancelled() and fs.exception() is None and fs.result() is _RECEIVING:
            self._receive_in_poller(conn)
        else:
            super().finish_request(conn, fs)

    def murder_pending(self) -> None:
        """gunicorn closes a connection left silent for its keep-alive time (5 s); one that
        stopped half-way through a head is told why first. A body that stopped, or comes too
        slowly, is answered 408. And the closing connections whose time is up are closed."""
        now = time.monotonic()
        for conn in self.pending_conns:
            if conn.timeout > now:
                break
            if conn.head:
                self._refuse(conn, "408 Request Timeout", self._late_head())
        super().murder_pending()
        for conn in [conn for conn in self.receiving if conn.body.late(now, self.client_timeout)]:
            self._end_receiving(conn, "late")
        for conn in [conn for conn in self.lingering if conn.timeout <= now]:
            self._closed(conn)

    def _linger(self, conn: Any) -> None:
        """Close after the answer (RFC 9112, section 9.6) without holding a thread or the main
        loop: read what the client still sends, so that the close does not reset the
        connection while the answer may be unread, as the poller finds it, until the client
        closes its side, or for _LINGER_SECONDS and _LINGER_BYTES at most (a refused body's
        own bounds, conn.linger, for one the client is still sending)."""
        seconds, conn.most = getattr(conn, "linger", None) or (_LINGER_SECONDS, _LINGER_BYTES)
        conn.timeout, conn.drained = time.monotonic() + seconds, 0
        self.lingering.append(conn)
        try:
            conn.sock.setblocking(False)
            self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._drain, conn))
        except (OSError, ValueError, KeyError):
            self._closed(conn)

    def _drain(self, conn: Any, sock: socket.socket) -> None:
        try:
            data = sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        conn.drained += len(data)
        if not data or conn.drained >= conn.most:
            self._closed(conn)

    def _closed(self, conn: Any) -> None:
        self.lingering.remove(conn)
        with contextlib.suppress(OSError, ValueError, KeyError):
            self.poller.unregister(conn.sock)
        conn.close()
        self.nr_conns -= 1
