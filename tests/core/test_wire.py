"""The worker's own rules that a loopback client cannot show alone (core.wire): where a
chunked body ends, what a head says of its body, and the pace an answer must be taken at, on a
real TCP connection whose send buffer is as small as a slow mobile link keeps it."""

import socket
import struct
import threading
import time
from collections.abc import Iterator

import pytest

from core.wire import ChunkedEnd, PacedAnswer, TooSlow, framing

CLIENT_TIMEOUT = 3


@pytest.mark.parametrize(
    ("pieces", "end"),
    [
        ([b"5\r\nhello\r\n0\r\n\r\nGET /"], 15),
        ([b"5;ext=1\r\nhel", b"lo\r\n", b"0\r\nTrailer: x\r\n\r\n"], 17),
        ([b"a\r\n0123456789\r\n0\r", b"\n\r\n"], 3),
        ([b"5\r\nhello\r\n"], None),
        ([b"0000000000000000ffff\r\n", b"x" * 0xFFFF + b"\r\n0\r\n\r\n"], 0xFFFF + 7),
        ([b"5\r\nhello\r\n0\r\n\r\r\n"], None),  # a trailer of a lone CR: not the end
    ],
)
def test_the_end_of_a_chunked_body_is_found_as_it_comes(pieces, end):
    scanner = ChunkedEnd()
    found = [scanner.end(piece) for piece in pieces]
    assert found[:-1] == [None] * (len(pieces) - 1)
    assert found[-1] == end


@pytest.mark.parametrize(
    "data",
    [b"zz\r\n", b"5\r\nhello!\r\n", b"-1\r\n", b"1" * 17 + b"\r\n", b"x" * 70_000],
)
def test_what_is_no_chunked_body_is_left_to_gunicorn_to_refuse(data):
    with pytest.raises(ValueError, match=r"chunk|trailers"):
        ChunkedEnd().end(data)


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b"POST /v1/x HTTP/1.1\r\nContent-Length: 12\r\n\r\n", ("/v1/x", 12, False)),
        (b"POST /data/import%2Dhistory/?a=1 HTTP/1.1\r\ncontent-length: 3\r\n\r\n",
         ("/data/import-history/", 3, False)),
        (b"PUT http://h/v1/y HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n"
         b"Expect: 100-Continue\r\n\r\n", ("/v1/y", None, True)),
        (b"POST /v1/x HTTP/1.0\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n",
         ("/v1/x", 3, False)),
        (b"\r\nPOST /v1/x HTTP/1.1\r\nContent-Length: 5\r\n\r\n", ("/v1/x", 5, False)),
        (b"POST /v1/x HTTP/1.2\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n",
         ("/v1/x", None, True)),
        (b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n", None),
        (b"POST /v1/x HTTP/1.1\r\nContent-Length: 0\r\n\r\n", None),
        # Framings gunicorn answers 400 before it reads a body: nothing to receive.
        (b"POST /v1/x HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n", None),
        (b"POST /v1/x HTTP/1.1\r\nContent-Length: +3\r\n\r\n", None),
        (b"POST /v1/x HTTP/1.1\r\nContent-Length: \xb2\r\n\r\n", None),
        (b"POST /v1/x HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", None),
        (b"POST /v1/x HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", None),
        (b"POST /v1/x HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", None),
        (b"POST /v1/x HTTP/1.1\r\nContent-Length : 3\r\n\r\n", None),
        (b"garbage\r\n\r\n", None),
    ],
)  # fmt: skip
def test_a_head_tells_its_body(head, expected):
    assert framing(head) == expected


@pytest.fixture
def connection() -> Iterator[tuple[socket.socket, socket.socket]]:
    """A loopback TCP connection: the server's end with a send buffer of a few KiB and
    writes bounded at CLIENT_TIMEOUT seconds, as core.workers bounds them, and the client's."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.socket()
        # Segments of a mobile link's size: the client's window opens as it reads, a few
        # hundred bytes at a time, not once per loopback segment of 64 KiB.
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 536)
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        client.connect(listener.getsockname())
        server, _ = listener.accept()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", CLIENT_TIMEOUT, 0))
    try:
        yield server, client
    finally:
        server.close()
        client.close()


def reading(client: socket.socket, size: int, every: float, stop: threading.Event) -> None:
    while not stop.wait(every):
        try:
            if not client.recv(size):
                return
        except OSError:
            return


def test_an_answer_taken_slower_than_its_pace_is_given_up(connection) -> None:
    """2 KB a second, in reads that let each write move within its bound: a plain sendall
    goes on for the eight minutes this megabyte takes at that pace; the answer is given up a
    few seconds in."""
    server, client = connection
    stop = threading.Event()
    reader = threading.Thread(target=reading, args=(client, 200, 0.1, stop))
    reader.start()
    started = time.monotonic()
    try:
        with pytest.raises(TooSlow, match=r"slower than 4096 bytes a second after 3 s"):
            PacedAnswer(server, client_timeout=CLIENT_TIMEOUT).sendall(b"x" * 1024 * 1024)
    finally:
        stop.set()
        reader.join()
    assert time.monotonic() - started < 15


def test_an_answer_taken_at_its_pace_is_sent_whole(connection) -> None:
    server, client = connection
    received = bytearray()

    def read_all() -> None:
        while len(received) < 256 * 1024 and (chunk := client.recv(65536)):
            received.extend(chunk)

    reader = threading.Thread(target=read_all)
    reader.start()
    PacedAnswer(server, client_timeout=CLIENT_TIMEOUT).sendall(b"y" * 256 * 1024)
    reader.join(timeout=10)
    assert bytes(received) == b"y" * 256 * 1024
