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
  to a thread only once the body is whole (_Body): a body over its path's limit is answered 413
  at once and drained in the poller for a moment (so the client, still sending, can read the
  answer), and one that stops for CLIENT_TIMEOUT seconds, or comes slower than 500 bytes a
  second past its first CLIENT_TIMEOUT, is answered 408; the limits and the answers are the
  service's (body_rules, set by config/gunicorn.py);
- writing the answer fails when the client takes nothing for CLIENT_TIMEOUT seconds (the
  socket's SO_SNDTIMEO), or takes it slower than 4 KiB a second past its first CLIENT_TIMEOUT
  (_PacedAnswer), which frees the thread;
- a connection that ends is closed from the poller, which reads what the client still sends
  (so that the close does not reset the connection under the answer) without holding a thread
  or the main loop.
"""

import contextlib
import fcntl
import importlib
import io
import json
import selectors
import socket
import struct
import tempfile
import termios
import time
from collections import deque
from concurrent.futures import Future
from functools import partial
from types import ModuleType
from typing import Any
from urllib.parse import unquote, urlsplit

from gunicorn.http2 import negotiation
from gunicorn.workers import gthread

# The largest head taken (nginx takes 32 KiB by default; a head is 0.5 to 2 KiB).
_HEAD_BYTES = 64 * 1024


def _whole(head: bytes) -> bool:
    return b"\r\n\r\n" in head or b"\n\n" in head


# Bytes a second a body must come at, past its first CLIENT_TIMEOUT seconds (Apache's MinRate).
_BODY_MIN_RATE = 500
# Bytes a second an answer must be taken at, past its first CLIENT_TIMEOUT seconds: a phone on
# a poor mobile network takes ten times that.
_ANSWER_MIN_RATE = 4096
# A body received is kept in memory up to this, then in a temporary file: a worker's thousand
# connections, each trickling a body, hold at most 64 MiB.
_BODY_IN_MEMORY = 64 * 1024
# A body past this (only the history import's may be, docs/imports.md) is one of at most
# _LARGE_AT_ONCE received at once by a worker: whoever sends them, before the service can tell
# who it is, fills no disk with them.
_LARGE_BODY = 4 * 1024 * 1024
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
        self.large: set[Any] = set()  # those of them past _LARGE_BODY
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
            _source(conn, self.client_timeout).received.extend(conn.body.parts())
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
                    f"Request header fields too large: the request's head is over {_HEAD_BYTES} "
                    "bytes",
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
        if result and source is not None and source.received:
            conn.parser.unreader.unread(source.take_received())
        return result

    def _with_body(self, conn: Any) -> Any:
        """The head is whole: hand it to gunicorn's parser, with its body once the poller has
        received it whole (_RECEIVING until then), or refused at once when it is over its
        path's limit."""
        whole, conn.head = conn.head, b""
        end = _head_end(whole)
        framing = _framing(whole[:end]) if self.rules is not None else None
        if conn.parser is None:
            conn.init()
            _source(conn, self.client_timeout)
        if framing is None:  # no body, or gunicorn refuses its framing before reading it
            conn.parser.unreader.unread(whole)
            return self._served(conn)
        assert self.rules is not None
        path, length, expects = framing
        limit = self.rules.body_limit(path)[0]
        if length is not None and length > limit:
            self._answer(conn, self.rules.body_refusal(path, 413))
            conn.linger = (self.client_timeout, min(length, self.rules.body_discard_bytes()))
            return False
        conn.parser.unreader.unread(whole[:end])
        body = conn.body = _Body(path, length, limit)
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
        its limit."""
        body = conn.body
        body.take(data)
        if body.received > body.limit:
            assert self.rules is not None
            self._answer(conn, self.rules.body_refusal(body.path, 413))
            conn.linger = (self.client_timeout, self.rules.body_discard_bytes())
            return False
        return True

    def _receive_in_poller(self, conn: Any) -> None:
        """Wait in the poller for the rest of the body (the main thread's part)."""
        if (
            conn.body.length is not None
            and conn.body.length > _LARGE_BODY
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
            f"{_LARGE_BODY} bytes already; send it again in a minute",
            "Retry-After: 60\r\n",
        )  # fmt: skip
        conn.body.close()
        conn.body = None
        self._close_answered(conn, (self.client_timeout, _LARGE_BODY))
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
            self._end_receiving(conn, 400)
            return
        if not self._took(conn, data):
            self._end_receiving(conn, None)
            return
        if body.length is None and body.received > _LARGE_BODY and conn not in self.large:
            self._stop_receiving(conn)
            if self._large(conn):
                self._receive_in_poller(conn)
            return
        if body.whole:
            self._stop_receiving(conn)
            self.enqueue_req(conn)  # a thread serves it now
        elif body.late(time.monotonic(), self.client_timeout):
            self._end_receiving(conn, 408)

    def _stop_receiving(self, conn: Any) -> None:
        self.receiving.discard(conn)
        self.large.discard(conn)
        with contextlib.suppress(OSError, ValueError, KeyError):
            self.poller.unregister(conn.sock)

    def _end_receiving(self, conn: Any, status: int | None) -> None:
        """The body will not be served: answer with `status` (when it is not None, answered
        already) and close."""
        self._stop_receiving(conn)
        if status is not None:
            assert self.rules is not None
            self._answer(conn, self.rules.body_refusal(conn.body.path, status))
            self.log.info(
                "%s: the body of a request to %s was answered %s after %d bytes",
                conn.client, conn.body.path, status, conn.body.received,
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
        source = _source(conn, self.client_timeout)
        # A body still on the socket (none that the poller received) is read at a pace.
        source.since, source.taken = time.monotonic(), 0
        if conn.continued:  # answered when the body was waited for
            req._expected_100_continue = conn.continued = False
        sock, conn.sock = conn.sock, _PacedAnswer(conn.sock, self.client_timeout)
        try:
            return bool(super().handle_request(req, conn))
        except BlockingIOError as exc:  # the socket's bound, or the answer's pace
            self.log.info(
                "%s: the client %s while %s %s was answered, and its connection was closed",
                conn.client,
                exc if isinstance(exc, _TooSlow)
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
            self._end_receiving(conn, 408)
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


def _head_end(data: bytes) -> int:
    """Where a whole head ends in `data`: past its empty line."""
    ends = [at + len(mark) for mark in (b"\r\n\r\n", b"\n\n") if (at := data.find(mark)) >= 0]
    return min(ends)


def _framing(head: bytes) -> tuple[str, int | None, bool] | None:
    """What a whole head says of its body: its path (as Django's path_info), its length (None
    when chunked), and whether the client waits for 100 Continue; None when it has none, or
    when its framing is one gunicorn refuses (400) before reading any body."""
    lines = head.decode("latin-1").split("\n")
    request_line = lines[0].rstrip("\r").split(" ")
    if len(request_line) != 3:
        return None
    target, version = request_line[1], request_line[2]
    lengths, codings, expects = [], [], False
    for line in lines[1:]:
        name, colon, value = line.rstrip("\r").partition(":")
        name, value = name.upper(), value.strip(" \t")
        if not colon:
            continue
        if name == "CONTENT-LENGTH":
            lengths.append(value)
        elif name == "TRANSFER-ENCODING":
            codings += [coding.strip(" \t").lower() for coding in value.split(",")]
        elif name == "EXPECT":
            expects = value.lower() == "100-continue" and version == "HTTP/1.1"
    try:
        path = unquote(urlsplit(target).path)
    except ValueError:
        path = target
    if codings:
        if codings[-1] != "chunked" or codings.count("chunked") > 1 or lengths:
            return None
        return (path, None, expects) if version == "HTTP/1.1" else None
    if len(lengths) != 1 or not (lengths[0].isascii() and lengths[0].isdigit()):
        return None
    length = int(lengths[0])
    return (path, length, expects) if length else None


class _Body:
    """A request's body as the poller receives it: kept (in memory, then in a temporary file)
    until it is whole, and what came after it, the next request's."""

    def __init__(self, path: str, length: int | None, limit: int) -> None:
        self.path, self.length, self.limit = path, length, limit
        self.left = length or 0
        self.chunks = _ChunkedEnd() if length is None else None
        # Closed by its reader (_Source) or when the body is refused (close).
        self.kept = tempfile.SpooledTemporaryFile(max_size=_BODY_IN_MEMORY)  # noqa: SIM115
        self.received, self.whole, self.after = 0, False, b""
        self.started = self.moved = time.monotonic()

    def take(self, data: bytes) -> None:
        if self.chunks is None:
            taken = min(self.left, len(data))
            self.left -= taken
            end: int | None = taken if not self.left else None
        else:
            try:
                end = self.chunks.end(data)
            except ValueError:  # gunicorn's parser refuses it (400): it has all there is
                end = len(data)
            taken = len(data) if end is None else end
        self.kept.write(data[:taken])
        self.received += taken
        self.moved = time.monotonic()
        if end is not None:
            self.whole, self.after = True, data[end:]
            self.kept.seek(0)

    def late(self, now: float, client_timeout: float) -> bool:
        """Whether it stopped for CLIENT_TIMEOUT, or comes slower than _BODY_MIN_RATE past
        its first CLIENT_TIMEOUT (Apache's mod_reqtimeout rule)."""
        return (
            now - self.moved > client_timeout
            or now - self.started > client_timeout + self.received / _BODY_MIN_RATE
        )

    def parts(self) -> list[Any]:
        return [self.kept, io.BytesIO(self.after)]

    def close(self) -> None:
        self.kept.close()


class _ChunkedEnd:
    """Where a chunked body ends (RFC 9112, section 7.1), found as its bytes come."""

    def __init__(self) -> None:
        self.state, self.line, self.left, self.trailers = "size", b"", 0, 0

    def end(self, data: bytes) -> int | None:
        """Where in `data` the body ends (past its last trailer's empty line), or None if it
        goes on; ValueError when it is no chunked body."""
        at = 0
        while at < len(data):
            if self.state == "data":
                taken = min(self.left, len(data) - at)
                at, self.left = at + taken, self.left - taken
                if not self.left:
                    self.state = "data-end"
                continue
            newline = data.find(b"\n", at)
            if newline < 0:
                self.line += data[at:]
                if len(self.line) > _HEAD_BYTES:
                    raise ValueError("a chunk's line is too long")
                return None
            line, self.line = (self.line + data[at:newline]).rstrip(b"\r"), b""
            at = newline + 1
            if self.state == "size":
                size = line.split(b";", 1)[0].strip(b" \t")
                if not size or len(size) > 16 or size.strip(b"0123456789abcdefABCDEF"):
                    raise ValueError("not a chunk's size")
                self.left = int(size, 16)
                self.state = "data" if self.left else "trailers"
            elif self.state == "data-end":
                if line:
                    raise ValueError("a chunk longer than its size")
                self.state = "size"
            elif not line:
                return at
            else:
                self.trailers += len(line)
                if self.trailers > _HEAD_BYTES:
                    raise ValueError("trailers too long")
        return None


class _Source:
    """Where gunicorn's parser reads a connection's bytes: what the poller received of a body
    (and after it) first, then the socket, the blocking way; from `since` on, a body's reads
    from the socket are bounded in all as Apache's mod_reqtimeout bounds them (CLIENT_TIMEOUT
    seconds, and one more for every _BODY_MIN_RATE bytes received). Each read is bounded by
    CLIENT_TIMEOUT already (SO_RCVTIMEO); without this, a client that sent a byte just before
    each bound ran out would hold its thread for as long as it liked."""

    def __init__(self, unreader: Any, client_timeout: float) -> None:
        self.read_socket = partial(type(unreader).chunk, unreader)
        self.client_timeout = client_timeout
        self.received: deque[Any] = deque()
        self.since: float | None = None
        self.taken = 0

    def chunk(self, size_hint: int | None = None) -> bytes:
        while self.received:
            data = self.received[0].read(min(max(size_hint or 0, 65536), 1024 * 1024))
            if data:
                return bytes(data)
            self.received.popleft().close()
        if self.since is not None and (
            time.monotonic() - self.since > self.client_timeout + self.taken / _BODY_MIN_RATE
        ):
            raise TimeoutError(
                f"the body came slower than {_BODY_MIN_RATE} bytes a second after "
                f"{self.client_timeout:g} s (CLIENT_TIMEOUT)"
            )
        data = self.read_socket(size_hint)
        self.taken += len(data)
        return bytes(data)

    def take_received(self) -> bytes:
        rest = b"".join(part.read() for part in self.received)
        for part in self.received:
            part.close()
        self.received.clear()
        return rest


def _source(conn: Any, client_timeout: float) -> _Source:
    """The connection's _Source, put under its parser's reads when first asked for."""
    source = getattr(conn, "source", None)
    if source is None:
        unreader = conn.parser.unreader
        source = conn.source = _Source(unreader, client_timeout)
        unreader.chunk = source.chunk
    return source


class _TooSlow(BlockingIOError):
    pass


class _PacedAnswer:
    """The connection's socket as gunicorn writes an answer to it: the answer must be taken at
    _ANSWER_MIN_RATE bytes a second past its first CLIENT_TIMEOUT (each write is bounded by
    CLIENT_TIMEOUT already, SO_SNDTIMEO), or the thread gives it up. Taken: what the client
    acknowledged, not what the kernel took to send, which may be megabytes."""

    def __init__(self, sock: socket.socket, client_timeout: float) -> None:
        self.sock, self.client_timeout = sock, client_timeout
        self.since: float | None = None
        self.sent = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sock, name)

    def sendall(self, data: bytes) -> None:
        view = memoryview(data).cast("B")
        if self.since is None:
            self.since = time.monotonic()
        while view:
            taken = self.sent - _unacknowledged(self.sock)
            if time.monotonic() - self.since > self.client_timeout + taken / _ANSWER_MIN_RATE:
                raise _TooSlow(
                    f"took the answer slower than {_ANSWER_MIN_RATE} bytes a second after "
                    f"{self.client_timeout:g} s (CLIENT_TIMEOUT)"
                )
            sent = self.sock.send(view)
            self.sent += sent
            view = view[sent:]


def _unacknowledged(sock: socket.socket) -> int:
    """Bytes written to the socket that its peer has not acknowledged yet (Linux's SIOCOUTQ);
    0 where that cannot be told."""
    try:
        return int(struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0" * 4))[0])
    except OSError:
        return 0
