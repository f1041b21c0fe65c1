"""What core.workers reads and writes on a connection, in pieces it can bound: a request's
head and what it says of the body, the body as the poller receives it (a chunked one's end
found as it comes), the source gunicorn's parser then reads, and the answer's pace
(docs/operations.md, "Slow and vanished clients")."""

import fcntl
import io
import re
import select
import socket
import struct
import tempfile
import termios
import time
from collections import deque
from functools import partial
from typing import Any
from urllib.parse import unquote, urlsplit

# The largest head taken (nginx takes 32 KiB by default; a head is 0.5 to 2 KiB).
HEAD_BYTES = 64 * 1024
# Bytes a second a body must come at, past its first CLIENT_TIMEOUT seconds (Apache's MinRate).
BODY_MIN_RATE = 500
# Bytes a second an answer must be taken at, past its first CLIENT_TIMEOUT seconds: a phone on
# a poor mobile network takes ten times that.
ANSWER_MIN_RATE = 4096
# A body received is kept in memory up to this, then in a temporary file: a worker's thousand
# connections, each trickling a body, hold at most 64 MiB.
BODY_IN_MEMORY = 64 * 1024
# A body past this (only the history import's may be, docs/imports.md) must come at
# LARGE_BODY_MIN_RATE: a stranger who holds one of the few places for such bodies
# (core.workers) sends a home uplink's bytes, not a trickle.
LARGE_BODY = 4 * 1024 * 1024
LARGE_BODY_MIN_RATE = 32 * 1024


def whole(head: bytes) -> bool:
    return b"\r\n\r\n" in head or b"\n\n" in head


def head_end(data: bytes) -> int:
    """Where a whole head ends in `data`: past its empty line."""
    ends = [at + len(mark) for mark in (b"\r\n\r\n", b"\n\n") if (at := data.find(mark)) >= 0]
    return min(ends)


def framing(head: bytes) -> tuple[str, int | None, bool] | None:
    """What a whole head says of its body: its path (as Django's path_info), its length (None
    when chunked), and whether the client waits for 100 Continue; None when it has none, or
    when its framing is one gunicorn refuses (400) before reading any body."""
    # gunicorn reads past empty lines before a request line (RFC 9112, section 2.2).
    lines = head.lstrip(b"\r\n").decode("latin-1").split("\n")
    request_line = lines[0].rstrip("\r").split(" ")
    if len(request_line) != 3:
        return None
    target, version = request_line[1], request_line[2]
    # What gunicorn takes for a chunked body, and for a 100 Continue: HTTP/1.1 and later ones.
    chunked_version = re.fullmatch(r"HTTP/1\.[1-9]", version) is not None
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
            expects = value.lower() == "100-continue" and chunked_version
    try:
        path = unquote(urlsplit(target).path)
    except ValueError:
        path = target
    if codings:
        if codings[-1] != "chunked" or codings.count("chunked") > 1 or lengths:
            return None
        return (path, None, expects) if chunked_version else None
    if len(lengths) != 1 or not (lengths[0].isascii() and lengths[0].isdigit()):
        return None
    length = int(lengths[0])
    return (path, length, expects) if length else None


class Body:
    """A request's body as the poller receives it: kept (in memory, then in a temporary file)
    until it is whole, and what came after it, the next request's."""

    def __init__(self, path: str, length: int | None, limit: int) -> None:
        self.path, self.length, self.limit = path, length, limit
        self.left = length or 0
        self.chunks = ChunkedEnd() if length is None else None
        # Closed by its reader (Source) or when the body is refused (close).
        self.kept = tempfile.SpooledTemporaryFile(max_size=BODY_IN_MEMORY)  # noqa: SIM115
        self.received, self.whole, self.after = 0, False, b""
        self.started = self.moved = time.monotonic()
        self.stretch: tuple[float, int] | None = None  # since when, and what had come by then

    def take(self, data: bytes) -> None:
        """Keep what of `data` is the body's; ValueError when it is no chunked body (OSError
        when it cannot be kept)."""
        if self.chunks is None:
            taken = min(self.left, len(data))
            self.left -= taken
            end: int | None = taken if not self.left else None
        else:
            end = self.chunks.end(data)
            taken = len(data) if end is None else end
        self.kept.write(data[:taken])
        self.received += taken
        self.moved = time.monotonic()
        if end is not None:
            self.whole, self.after = True, data[end:]
            self.kept.seek(0)

    def late(self, now: float, client_timeout: float) -> bool:
        """Whether it stopped for CLIENT_TIMEOUT, or came slower than its pace: BODY_MIN_RATE
        bytes a second past its first CLIENT_TIMEOUT (Apache's mod_reqtimeout rule), in all
        and in each further CLIENT_TIMEOUT, so that what came fast does not let the rest come
        a byte at a time; LARGE_BODY_MIN_RATE for one declared or come past LARGE_BODY bytes."""
        if now - self.moved > client_timeout:
            return True
        if now - self.started <= client_timeout:
            return False
        large = self.received > LARGE_BODY or (self.length or 0) > LARGE_BODY
        pace = LARGE_BODY_MIN_RATE if large else BODY_MIN_RATE
        if now - self.started > client_timeout + self.received / pace:
            return True
        if self.stretch is None or now - self.stretch[0] > client_timeout:
            if self.stretch is not None and (
                self.received - self.stretch[1] < pace * (now - self.stretch[0])
            ):
                return True
            self.stretch = (now, self.received)
        return False

    def parts(self) -> list[Any]:
        return [self.kept, io.BytesIO(self.after)]

    def close(self) -> None:
        self.kept.close()


class ChunkedEnd:
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
                if len(self.line) > HEAD_BYTES:
                    raise ValueError("a chunk's line is too long")
                return None
            line, self.line = self.line + data[at:newline], b""
            line = line[:-1] if line.endswith(b"\r") else line
            at = newline + 1
            if self.state == "size":
                size = line.split(b";", 1)[0].strip(b" \t")
                if not size or len(size.lstrip(b"0")) > 16 or size.strip(b"0123456789abcdefABCDEF"):
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
                if self.trailers > HEAD_BYTES:
                    raise ValueError("trailers too long")
        return None


class Source:
    """Where gunicorn's parser reads a connection's bytes: what the poller received of a body
    (and after it) first, then the socket.

    Where the poller receives the bodies (`received_here`), a request in a thread never waits
    on the socket: what gunicorn's parser still wants of it then (its reading of a malformed
    framing is not the poller's) is a TimeoutError at once, which ends the request (a 408) or
    the connection, and frees the thread. Elsewhere (no body rules, TLS) the socket is read
    the blocking way, and from `since` on a body's reads are bounded in all as Apache's
    mod_reqtimeout bounds them (CLIENT_TIMEOUT seconds, and one more for every BODY_MIN_RATE
    bytes received): each read is bounded by CLIENT_TIMEOUT already (SO_RCVTIMEO), but a
    client that sent a byte just before each bound ran out would hold its thread for as long
    as it liked."""

    def __init__(self, unreader: Any, client_timeout: float) -> None:
        self.sock = unreader.sock
        self.read_socket = partial(type(unreader).chunk, unreader)
        self.client_timeout = client_timeout
        self.received: deque[Any] = deque()
        self.received_here = False
        self.since: float | None = None
        self.taken = 0

    def chunk(self, size_hint: int | None = None) -> bytes:
        while self.received:
            data = self.received[0].read(min(max(size_hint or 0, 65536), 1024 * 1024))
            if data:
                return bytes(data)
            self.received.popleft().close()
        if self.received_here:
            # Looked at first: with a timeout set (gunicorn's drain sets one), Python's recv
            # waits for data even with MSG_DONTWAIT.
            if not select.select([self.sock], [], [], 0)[0]:
                raise TimeoutError("the request's body was not where its head said")
            return self.sock.recv(max(size_hint or 0, 8192), socket.MSG_DONTWAIT)
        if self.since is not None and (
            time.monotonic() - self.since > self.client_timeout + self.taken / BODY_MIN_RATE
        ):
            raise TimeoutError(
                f"the body came slower than {BODY_MIN_RATE} bytes a second after "
                f"{self.client_timeout:g} s (CLIENT_TIMEOUT)"
            )
        data = self.read_socket(size_hint)
        self.taken += len(data)
        return bytes(data)

    def take_received(self) -> bytes:
        rest = b"".join(part.read() for part in self.received)
        self.close()
        return rest

    def close(self) -> None:
        """Let go of what was received (a temporary file's disk, at once)."""
        for part in self.received:
            part.close()
        self.received.clear()


def source_of(conn: Any, client_timeout: float) -> Source:
    """The connection's Source, put under its parser's reads when first asked for."""
    source = getattr(conn, "source", None)
    if source is None:
        unreader = conn.parser.unreader
        source = conn.source = Source(unreader, client_timeout)
        unreader.chunk = source.chunk
    return source


class TooSlow(BlockingIOError):
    pass


class PacedAnswer:
    """The connection's socket as gunicorn writes an answer to it: the answer must be taken at
    ANSWER_MIN_RATE bytes a second past its first CLIENT_TIMEOUT (each write is bounded by
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
            taken = self.sent - unacknowledged(self.sock)
            if time.monotonic() - self.since > self.client_timeout + taken / ANSWER_MIN_RATE:
                raise TooSlow(
                    f"took the answer slower than {ANSWER_MIN_RATE} bytes a second after "
                    f"{self.client_timeout:g} s (CLIENT_TIMEOUT)"
                )
            sent = self.sock.send(view)
            self.sent += sent
            view = view[sent:]


def unacknowledged(sock: socket.socket) -> int:
    """Bytes written to the socket that its peer has not acknowledged yet (Linux's SIOCOUTQ);
    0 where that cannot be told."""
    try:
        return int(struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0" * 4))[0])
    except OSError:
        return 0
