"""Slow and vanished clients hold no thread for long, under gunicorn with config/gunicorn.py and
the production settings (core.workers): more stalled connections than the worker has threads,
and everyone else is still answered at once; each stalled one gets its 408 naming
CLIENT_TIMEOUT, or is closed, within that time."""

import contextlib
import http.client
import json
import os
import select
import socket
import threading
import time
from collections.abc import Iterator

import psutil
import pytest
from django.conf import settings
from django.db import connection

from tests.e2e.trickle import trickled_head, trickling
from tests.factories import UserFactory
from tests.servers import gunicorn_service, production_env

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("transactional_db")]

CLIENT_TIMEOUT = 1.5
THREADS = 2
KEEPALIVE = 1
STALLED = 2 * THREADS + 1  # more than the worker's threads, with room to spare
PASSWORD = "a long and unusual passphrase for the slow clients"


LATE_HEAD = (
    "Request timeout: the request's head did not arrive whole within 1.5 s (CLIENT_TIMEOUT), "
    "or stopped for 1 s"
)

BODY_LATE = (
    "Request timeout: the request's body stopped arriving, or came too slowly (CLIENT_TIMEOUT)"
)


@pytest.fixture(scope="module")
def served(django_db_setup: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple]:
    """One worker of THREADS threads, as small as a home server's: its port and its log."""
    env = production_env(
        "slow-clients",
        connection.settings_dict,
        WEB_CONCURRENCY="1",
        WEB_THREADS=str(THREADS),
        CLIENT_TIMEOUT=str(CLIENT_TIMEOUT),
        # A silent connection, or a head that stopped, is closed after this (5 s as deployed).
        GUNICORN_CMD_ARGS=f"--keep-alive {KEEPALIVE}",
    )
    # A static file of 4 MiB to be answered (a fresh clone has collected none).
    static = tmp_path_factory.mktemp("static")
    (static / "answer.bin").write_bytes(os.urandom(4 * 1024 * 1024))
    env["STATIC_ROOT"] = str(static)
    env.pop("REDIS_URL", None)
    log = tmp_path_factory.mktemp("gunicorn") / "gunicorn.log"
    with gunicorn_service(env, log) as port:
        yield port, log


@pytest.fixture
def port(served: tuple) -> int:
    return served[0]


def answered_at_once(port: int, path: str = "/health", token: str = "") -> float:
    """Seconds a new client waits for GET `path` (which must answer 200), with a bearer token
    when one is given."""
    started = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {token}"} if token else {})
        response = conn.getresponse()
        response.read()
    finally:
        conn.close()
    assert response.status == 200
    return time.monotonic() - started


def opened(port: int, sent: bytes, receive_buffer: int | None = None) -> socket.socket:
    sock = socket.socket()
    if receive_buffer is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.connect(("127.0.0.1", port))
    sock.sendall(sent)
    return sock


def answer_of(sock: socket.socket, wait: float = 10) -> tuple[bytes, float]:
    """All the server sends until it closes, and when it closed (seconds from now)."""
    started, received = time.monotonic(), b""
    sock.settimeout(wait)
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    return received, time.monotonic() - started


def error_object(answer: bytes) -> tuple[str, dict]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return head.split(b"\r\n")[0].decode(), json.loads(body)


def test_half_sent_heads_hold_no_thread_and_each_gets_its_408(served: tuple) -> None:
    port, log = served
    stalled = [opened(port, b"GET /v1/ HTTP/1.1\r\nHost: 127.0.0.1\r\n") for _ in range(STALLED)]
    try:
        assert max(answered_at_once(port) for _ in range(3)) < 0.5
        for sock in stalled:
            answer, closed_after = answer_of(sock)
            assert closed_after < KEEPALIVE + 2  # the poller looks each second
            status, body = error_object(answer)
            assert status == "HTTP/1.1 408 Request Timeout"
            assert body == {"code": "408", "message": LATE_HEAD}
    finally:
        for sock in stalled:
            sock.close()
    assert LATE_HEAD in log.read_text()  # each one cut off is named in the log


def server_cpu_seconds(port: int) -> float:
    listening = {
        c.pid
        for c in psutil.net_connections(kind="tcp")
        if c.laddr and c.laddr.port == port and c.status == psutil.CONN_LISTEN and c.pid
    }
    assert listening
    processes = [psutil.Process(pid) for pid in listening]
    return sum(sum(p.cpu_times()[:2]) for p in processes)


def test_a_half_sent_head_costs_no_cpu_while_it_waits(port: int) -> None:
    """What has arrived of a head is taken off the socket: the poller wakes again only for
    more, not for what it was told of already."""
    stalled = [opened(port, b"GET /v1/ HTTP/1.1\r\nHost: 127.0.0.1\r\n") for _ in range(STALLED)]
    closed = opened(port, b"GET /v1/ HTTP/1.1\r\n")
    closed.shutdown(socket.SHUT_WR)  # and nothing more will come
    try:
        time.sleep(0.2)
        before = server_cpu_seconds(port)
        time.sleep(1)
        assert server_cpu_seconds(port) - before < 0.1
        assert answer_of(closed, wait=2)[0] == b""  # closed without a word
    finally:
        for sock in [*stalled, closed]:
            sock.close()


def test_a_head_over_64_kib_is_a_431(port: int) -> None:
    sock = opened(port, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 70_000)
    try:
        status, body = error_object(answer_of(sock)[0])
    finally:
        sock.close()
    assert status == "HTTP/1.1 431 Request Header Fields Too Large"
    assert body == {
        "code": "431",
        "message": "Request header fields too large: the request's head is over 65536 bytes",
    }


def test_a_head_trickled_a_byte_at_a_time_is_cut_off(port: int) -> None:
    """A byte every 0.1 s would take minutes to fill gunicorn's limits on a head: the whole head
    is bounded, not only the wait for each byte."""
    sock = opened(port, b"G")
    started = time.monotonic()
    try:
        head = b"ET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 200
        for byte in head:
            if select.select([sock], [], [], 0.1)[0]:
                break  # the answer is there
            sock.send(bytes([byte]))
        assert time.monotonic() - started < CLIENT_TIMEOUT + 1
        answer, _ = answer_of(sock)
        assert error_object(answer)[0] == "HTTP/1.1 408 Request Timeout"
    finally:
        sock.close()


def test_a_connection_opened_and_left_silent_holds_no_thread(port: int) -> None:
    silent = [socket.create_connection(("127.0.0.1", port)) for _ in range(STALLED)]
    try:
        assert max(answered_at_once(port) for _ in range(3)) < 0.5
    finally:
        for sock in silent:
            sock.close()


@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        ("/v1/auth/login", "application/json"),  # DRF's parser reads it
        ("/index.php/login/v2/poll", "application/x-www-form-urlencoded"),  # a Django view
    ],
)
def test_a_body_that_stops_arriving_is_a_408_naming_the_limit(
    served: tuple, path: str, content_type: str
) -> None:
    port, log = served
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\n"
        "Content-Length: 1000\r\n\r\n"
    ).encode()
    stalled = [opened(port, head + b"token=") for _ in range(STALLED)]
    try:
        answers = [answer_of(sock) for sock in stalled]
        assert answered_at_once(port) < 0.5  # every thread free again
    finally:
        for sock in stalled:
            sock.close()
    for answer, _ in answers:
        status, body = error_object(answer)
        assert status == "HTTP/1.1 408 Request Timeout", answer[:300]
        assert body == {"code": "408", "message": BODY_LATE}
    log_text = log.read_text()
    assert "Internal Server Error" not in log_text
    assert "Traceback" not in log_text


def test_a_body_trickled_just_under_each_reads_bound_is_cut_off(port: int) -> None:
    """A byte a second never lets one read wait CLIENT_TIMEOUT (1.5 s), but the body as a whole
    must come at 500 bytes a second past its first CLIENT_TIMEOUT."""
    head = (
        b"POST /v1/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: 1000\r\n\r\n"
    )
    socks = [opened(port, head) for _ in range(THREADS)]  # every thread on one
    started, waiting = time.monotonic(), list(socks)
    try:
        while waiting and time.monotonic() - started < CLIENT_TIMEOUT + 3:
            time.sleep(0.9)
            answered = select.select(waiting, [], [], 0)[0]
            waiting = [sock for sock in waiting if sock not in answered]
            for sock in waiting:
                sock.send(b" ")
        assert not waiting
        assert answered_at_once(port) < 0.5
        answers = [answer_of(sock)[0] for sock in socks]
    finally:
        for sock in socks:
            sock.close()
    for answer in answers:
        status, body = error_object(answer)
        assert status == "HTTP/1.1 408 Request Timeout", answer[:200]
        assert body["message"] == BODY_LATE


def test_a_head_sent_behind_an_answered_request_and_left_half_way_holds_no_thread(
    port: int,
) -> None:
    """A request and half the next one in one send: gunicorn reads the half along with the
    first, and the worker takes it back to wait for the rest in the poller."""
    both = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /health HTTP/1.1\r\nHost: 1"
    socks = [opened(port, both) for _ in range(STALLED)]
    try:
        time.sleep(0.2)
        assert max(answered_at_once(port) for _ in range(3)) < 0.5
        answers = [answer_of(sock)[0] for sock in socks]
    finally:
        for sock in socks:
            sock.close()
    for answer in answers:
        first, _, second = answer.partition(b"HTTP/1.1 408")
        assert first.startswith(b"HTTP/1.1 200 OK"), answer[:200]
        assert LATE_HEAD.encode() in second


def test_an_answer_the_client_stops_reading_frees_its_thread(served: tuple) -> None:
    """A 4 MiB static file to clients that read none of it: each thread is freed once its
    write moved nothing for CLIENT_TIMEOUT, with a line in the log and no traceback."""
    port, log = served
    request = b"GET /static/answer.bin HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    stalled = [opened(port, request, receive_buffer=4096) for _ in range(STALLED)]
    try:
        time.sleep(0.3)
        waited = answered_at_once(port)
        assert waited < CLIENT_TIMEOUT + 2
        assert max(answered_at_once(port) for _ in range(3)) < 0.5
        assert [sock.recv(12) for sock in stalled] == [b"HTTP/1.1 200"] * STALLED
    finally:
        for sock in stalled:
            sock.close()
    log_text = log.read_text()
    assert "the client moved nothing for 1.5 s (CLIENT_TIMEOUT)" in log_text
    assert "Traceback" not in log_text


def test_clients_that_never_close_after_the_answer_do_not_stall_the_worker(port: int) -> None:
    """Each answer with `Connection: close` ends with the server waiting a moment for the
    client's side to close too; a client that never closes must not make everyone else wait."""
    held: list[socket.socket] = []
    stop = time.monotonic() + 3
    closing = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"

    def never_closing() -> None:
        while time.monotonic() < stop:
            held.append(opened(port, closing))
            time.sleep(0.05)

    thread = threading.Thread(target=never_closing)
    thread.start()
    waits = []
    try:
        while time.monotonic() < stop:
            waits.append(answered_at_once(port))
            time.sleep(0.05)
    finally:
        thread.join()
        for sock in held:
            sock.close()
    assert len(held) > 30
    assert max(waits) < 0.5, sorted(waits)[-5:]


def test_a_kept_alive_connection_serves_request_after_request(port: int) -> None:
    """The head is looked at before it is read: requests on one connection, and two sent at
    once (pipelined), are each answered."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        for _ in range(5):
            conn.request("GET", "/health")
            response = conn.getresponse()
            response.read()
            assert response.status == 200
    finally:
        conn.close()
    twice = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" * 2
    sock = opened(port, twice[:-1])  # the second head's last byte a moment later
    try:
        time.sleep(0.2)
        sock.sendall(twice[-1:])
        sock.shutdown(socket.SHUT_WR)
        answer, _ = answer_of(sock)
    finally:
        sock.close()
    assert answer.count(b"HTTP/1.1 200 OK") == 2


def token_of(port: int) -> str:
    """A bearer token of a new account, for a sync request that costs no password check."""
    user = UserFactory(with_deployed_password=PASSWORD)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        body = json.dumps({"username": user.username, "password": PASSWORD})
        conn.request("POST", "/v1/auth/login", body, {"Content-Type": "application/json"})
        response = conn.getresponse()
        assert response.status == 200
        return str(json.loads(response.read())["access_token"])
    finally:
        conn.close()


def test_two_dozen_trickled_bodies_hold_no_thread(served: tuple) -> None:
    """Bodies sent at 600 bytes a second, above the pace a body must keep: a dozen within the
    limit, which used to hold a thread each until they had all arrived (35 minutes for 1 MiB),
    and a dozen declared over it, which held one while the 413's drain read them. The poller
    receives the first and answers the others 413 at once, and everyone else is answered."""
    port, log = served
    token = token_of(port)
    heads = [trickled_head("/v1/auth/login", settings.MAX_BODY_BYTES)] * 12
    heads += [trickled_head("/v1/subscriptions", settings.MAX_BODY_BYTES + 1)] * 12
    with trickling(port, heads, rate=600) as socks:
        time.sleep(0.5)
        waits = []
        stop = time.monotonic() + 3
        while time.monotonic() < stop:
            waits += [answered_at_once(port), answered_at_once(port, "/v1/subscriptions", token)]
        over = [answer_of(sock, wait=5)[0] for sock in socks[12:]]
    assert max(waits) < 1, sorted(waits)[-3:]
    for answer in over:
        status, body = error_object(answer)
        assert status == "HTTP/1.1 413 Request Entity Too Large", answer[:200]
        assert body["message"] == (
            f"Request body too large: the limit is {settings.MAX_BODY_BYTES} bytes"
        )
    assert "Traceback" not in log.read_text()


def test_a_body_declared_over_the_limit_is_answered_before_it_is_sent(port: int) -> None:
    """The 413 comes at once, with the connection to close, and its drain ends by itself."""
    sock = opened(port, trickled_head("/v1/subscriptions", 10 * settings.MAX_BODY_BYTES))
    try:
        answer, closed_after = answer_of(sock, wait=CLIENT_TIMEOUT + 3)
    finally:
        sock.close()
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
    assert b"Connection: close" in answer
    assert closed_after < CLIENT_TIMEOUT + 2  # the drain's bound: nothing more was sent


def test_a_received_body_reaches_the_app_whole(port: int) -> None:
    """A body received in the poller, sent in pieces, larger than what is kept in memory (it
    goes to a temporary file), is the app's as sent: it parses it, and finds the password too
    long (OPA's 405 for input that does not validate)."""
    body = json.dumps({"username": "someone", "password": "x" * 100_000}).encode()
    sock = opened(port, trickled_head("/v1/auth/login", len(body)) + body[:1000])
    try:
        for start in range(1000, len(body), 30_000):
            time.sleep(0.05)
            sock.sendall(body[start : start + 30_000])
        answer, _ = answer_of(sock, wait=3)
    finally:
        sock.close()
    status, error = error_object(answer)
    assert status == "HTTP/1.1 405 Method Not Allowed", answer[:300]
    assert error["errors"] == {"password": ["Ensure this field has no more than 4096 characters."]}


def test_a_chunked_body_is_received_whole_and_the_next_request_follows_it(port: int) -> None:
    """Its end is found as it comes, and the request sent behind it in the same packet is
    answered too. (Django reads no chunked body under WSGI, which gives it no length: the login
    finds no fields, OPA's 405.)"""
    body = json.dumps({"username": "nobody-here", "password": "wrong"}).encode()
    chunked = (
        b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in (body[:10], body[10:]))
        + b"0\r\n\r\n"
    )
    head = (
        b"POST /v1/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
    )
    after = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    sock = opened(port, head + chunked[:7])
    try:
        time.sleep(0.2)
        sock.sendall(chunked[7:] + after)  # the next request in the same send as the end
        answer, _ = answer_of(sock)
    finally:
        sock.close()
    assert answer.startswith(b"HTTP/1.1 405 Method Not Allowed"), answer[:300]
    assert answer.count(b"HTTP/1.1 200 OK") == 1, answer[-300:]


def test_a_chunked_body_past_the_limit_is_a_413(port: int) -> None:
    head = (
        b"POST /v1/subscriptions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    piece = b" " * 65536
    sock = opened(port, head)
    try:
        with contextlib.suppress(OSError):
            for _ in range(settings.MAX_BODY_BYTES // len(piece) + 2):
                sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
        answer, _ = answer_of(sock)
    finally:
        sock.close()
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]


def test_a_client_that_expects_100_continue_gets_it_once(port: int) -> None:
    body = json.dumps({"username": "nobody-here", "password": "wrong"}).encode()
    head = trickled_head("/v1/auth/login", len(body)).replace(
        b"\r\n\r\n", b"\r\nExpect: 100-continue\r\n\r\n"
    )
    sock = opened(port, head)
    try:
        sock.settimeout(5)
        assert sock.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(body)
        answer, _ = answer_of(sock)
    finally:
        sock.close()
    assert answer.startswith(b"HTTP/1.1 401"), answer[:200]
    assert b"100 Continue" not in answer  # not a second one, once the body is in


def test_answers_taken_a_few_bytes_at_a_time_free_their_threads(served: tuple) -> None:
    """The 4 MiB static file to more clients than threads, each reading 2.5 KB a second:
    each thread gives its answer up (the pace an answer must keep, or a write that moved
    nothing for CLIENT_TIMEOUT: on loopback the kernel takes megabytes at once, and
    tests/core/test_workers.py shows the pace on a link's small buffers), with a line in the
    log, and everyone else is answered again."""
    port, log = served
    request = b"GET /static/answer.bin HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    line = "while GET /static/answer.bin was answered, and its connection was closed"
    before = log.read_text().count(line)
    slow = [opened(port, request, receive_buffer=4096) for _ in range(STALLED)]
    for sock in slow:
        sock.setblocking(False)
    started = time.monotonic()
    try:
        while log.read_text().count(line) < before + STALLED:
            assert time.monotonic() - started < 20, "a slow reader still holds its thread"
            time.sleep(0.1)
            for sock in slow:
                with contextlib.suppress(BlockingIOError):
                    sock.recv(256)
        assert max(answered_at_once(port) for _ in range(3)) < 0.5
    finally:
        for sock in slow:
            sock.close()
    assert "Traceback" not in log.read_text()


# Heads and bodies whose framing gunicorn's parser reads otherwise than the poller might: each
# sent whole but for its last part, then a byte every 0.9 s (each within the socket's bound).
# The thread that serves such a request never waits on the socket for it.
MISREAD = {
    "an empty line before the request line": (
        b"\r\nGET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n"
    ),
    "a trailer line of a lone CR": (
        b"POST /v1/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5\r\nhello\r\n0\r\n\r\r\n"
    ),
    "a chunk size with leading zeros": (
        b"POST /v1/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"0000000000000000ffff\r\nab"
    ),
    "chunked in HTTP/1.2": (
        b"POST /v1/auth/login HTTP/1.2\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5\r\nhel"
    ),
}


@pytest.mark.parametrize("sent", MISREAD.values(), ids=MISREAD.keys())
def test_a_framing_misread_holds_no_thread(port: int, sent: bytes) -> None:
    socks = [opened(port, sent) for _ in range(STALLED)]
    try:
        stop = time.monotonic() + 4
        waits = []
        while time.monotonic() < stop:
            time.sleep(0.3)
            for sock in socks:
                with contextlib.suppress(OSError):
                    sock.send(b"a", socket.MSG_DONTWAIT)
            waits.append(answered_at_once(port))
    finally:
        for sock in socks:
            sock.close()
    assert max(waits) < 0.5, sorted(waits)[-3:]


def test_a_chunked_body_that_is_no_chunked_body_is_a_400(port: int) -> None:
    head = b"POST /v1/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
    sock = opened(port, head + b"5\r\nhelloXX\r\n")
    try:
        answer, _ = answer_of(sock)
    finally:
        sock.close()
    status, body = error_object(answer)
    assert status == "HTTP/1.1 400 Bad Request"
    assert body["message"] == "Bad request: the request's chunked body is malformed"


def test_a_body_whose_start_came_fast_must_keep_its_pace(port: int) -> None:
    """20 KB at once earns 40 s of credit at 500 bytes a second; a byte every 1.4 s after it
    (each within the socket's bound of 1.5 s) is cut off all the same: the pace holds in each
    CLIENT_TIMEOUT, not only in all."""
    sock = opened(port, trickled_head("/v1/auth/login", 1_000_000) + b" " * 20_000)
    started = time.monotonic()
    try:
        while not select.select([sock], [], [], 1.4)[0]:
            assert time.monotonic() - started < 10, "the body is still being received"
            sock.send(b" ")
        answer, _ = answer_of(sock)
    finally:
        sock.close()
    status, body = error_object(answer)
    assert status == "HTTP/1.1 408 Request Timeout"
    assert body["message"] == BODY_LATE


def test_a_chunked_body_whole_in_the_read_that_makes_it_large_is_served(port: int) -> None:
    """Its end comes in the same read that takes it past 4 MiB: served (here the sign-in
    rule's 413 for a stranger's large upload), not left waiting for bytes that never come."""
    data = b" " * (4 * 1024 * 1024 + 10_000)
    head = (
        b"POST /data/import-history/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    sock = opened(port, head)
    try:
        sock.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data))
        answer, _ = answer_of(sock, wait=5)
    finally:
        sock.close()
    assert not answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert answer.startswith(b"HTTP/1.1 "), answer[:200]


@pytest.mark.parametrize("first", [0, 5 * 1024 * 1024], ids=["from-the-start", "past-4-MiB"])
def test_a_large_body_must_come_at_a_home_uplinks_pace(port: int, first: int) -> None:
    """A body over 4 MiB must come at 32 KiB a second: two strangers' uploads at 600 bytes a
    second no longer hold the worker's two places for large bodies for days."""
    socks = [opened(port, history_head(64 * 1024 * 1024) + b" " * first) for _ in range(2)]
    started = time.monotonic()
    try:
        waiting = list(socks)
        while waiting:
            assert time.monotonic() - started < 10, "a large body still holds its place"
            time.sleep(0.1)
            answered = select.select(waiting, [], [], 0)[0]
            waiting = [sock for sock in waiting if sock not in answered]
            for sock in waiting:
                with contextlib.suppress(OSError):
                    sock.send(b" " * 60, socket.MSG_DONTWAIT)
        answers = [answer_of(sock)[0] for sock in socks]
    finally:
        for sock in socks:
            sock.close()
    for answer in answers:
        assert answer.startswith(b"HTTP/1.1 408 Request Timeout"), answer[:200]


def history_head(size: int) -> bytes:
    return trickled_head("/data/import-history/", size, "multipart/form-data; boundary=xx")
