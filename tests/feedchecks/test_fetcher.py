"""The SSRF-safe fetcher against a real local HTTP server (OWASP API7)."""

import contextlib
import ipaddress
import select
import socket
import ssl
import threading
import time

import pytest
import trustme

from feedchecks import fetcher
from tests.feedchecks.feedserver import GUID, FeedServer, rss
from tests.helpers import wait_until

LOOPBACK = fetcher.parse_networks(["127.0.0.0/8"])


def fetch(url: str, **kwargs):
    kwargs.setdefault("allowed_networks", LOOPBACK)
    return fetcher.fetch(url, **kwargs)


def test_fetches_a_feed(feed_server):
    feed_server.feed("/feed", rss(guid=GUID))
    got = fetch(feed_server.url("/feed"))
    assert got.body == rss(guid=GUID)
    assert got.permanent_url is None
    assert not got.truncated


def test_a_chain_of_permanent_redirects_is_a_move(feed_server):
    feed_server.redirect("/a", feed_server.url("/b"), status=301)
    feed_server.redirect("/b", "/c", status=308)  # relative Location too
    feed_server.feed("/c", rss())
    got = fetch(feed_server.url("/a"))
    assert got.final_url == got.permanent_url == feed_server.url("/c")
    assert feed_server.requests == ["/a", "/b", "/c"]


def test_a_temporary_hop_ends_the_move_where_it_starts(feed_server):
    feed_server.redirect("/a", "/b", status=301)
    feed_server.redirect("/b", "/c", status=302)
    feed_server.redirect("/c", "/d", status=301)
    feed_server.feed("/d", rss())
    got = fetch(feed_server.url("/a"))
    assert got.final_url == feed_server.url("/d")
    assert got.permanent_url == feed_server.url("/b")


@pytest.mark.parametrize("status", [302, 303, 307])
def test_temporary_redirects_are_followed_but_are_no_move(feed_server, status):
    feed_server.redirect("/a", "/b", status=status)
    feed_server.feed("/b", rss())
    got = fetch(feed_server.url("/a"))
    assert got.final_url == feed_server.url("/b")
    assert got.permanent_url is None


def test_at_most_three_redirects(feed_server):
    for hop in range(4):
        feed_server.redirect(f"/{hop}", f"/{hop + 1}")
    feed_server.feed("/4", rss())
    with pytest.raises(fetcher.FetchError, match="More than 3 redirects"):
        fetch(feed_server.url("/0"))
    assert feed_server.requests == ["/0", "/1", "/2", "/3"]
    feed_server.requests.clear()
    assert fetch(feed_server.url("/1")).final_url == feed_server.url("/4")


def test_an_error_status_is_an_error(feed_server):
    with pytest.raises(fetcher.FetchError, match="HTTP 404"):
        fetch(feed_server.url("/missing"))


@pytest.mark.parametrize(
    "location", ["file:///etc/passwd", "ftp://example.com/feed", "gopher://x/"]
)
def test_a_redirect_to_another_scheme_is_refused(feed_server, location):
    feed_server.redirect("/a", location)
    with pytest.raises(fetcher.FetchError, match="Redirect to a bad URL"):
        fetch(feed_server.url("/a"))


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/feed", "file:///etc/passwd"])
def test_only_http_and_https(url):
    with pytest.raises(fetcher.FetchError, match="Only http and https"):
        fetch(url)


def test_a_50_mb_body_is_cut_at_the_cap(feed_server):
    feed_server.huge("/big", 50 * 1024 * 1024)
    started = time.monotonic()
    got = fetch(feed_server.url("/big"), max_bytes=1024 * 1024)
    assert got.truncated
    assert len(got.body) == 1024 * 1024
    assert time.monotonic() - started < 10
    time.sleep(0.2)  # let the server notice the client hung up
    # Socket buffers hold a few MB at most: the rest was never sent, let alone read.
    assert feed_server.bytes_sent < 20 * 1024 * 1024


@pytest.mark.parametrize("headers_too", [False, True], ids=["body", "headers"])
def test_a_slow_drip_is_cut_at_the_total_timeout(feed_server, headers_too):
    feed_server.drip("/drip", headers_too=headers_too, every=0.05)
    started = time.monotonic()
    with pytest.raises(fetcher.FetchError, match="Timed out"):
        fetch(feed_server.url("/drip"), connect_timeout=1, total_timeout=1.5)
    assert time.monotonic() - started < 3


@pytest.mark.parametrize(
    ("headers_too", "every"), [(False, 1), (True, 0.02)], ids=["body", "headers-and-body"]
)
def test_a_drip_with_connection_close_is_cut_at_the_total_timeout(feed_server, headers_too, every):
    """`Connection: close` makes http.client drop its connection's socket (`conn.sock = None`)
    once the headers are read, and read on through the response alone: the deadline must still
    reach the socket. A byte a second never trips the read timeout; dripped at 50 bytes a second,
    the headers take most of the time and the deadline comes in the body."""
    feed_server.drip("/drip", headers_too=headers_too, every=every, close=True, seconds=20)
    started = time.monotonic()
    with pytest.raises(fetcher.FetchError, match="Timed out"):
        fetch(feed_server.url("/drip"), connect_timeout=5, total_timeout=2)
    took = time.monotonic() - started
    assert took < 2 + 1, took
    # The fetch hung up on the server (its end of the drip is when it saw that).
    wait_until(lambda: len(feed_server.drips) == 1, 5, "the server to see the client go")
    ((drip_started, drip_ended),) = feed_server.drips
    assert drip_ended - drip_started < 2 + 1


def test_a_connect_timeout():
    # A documentation address that goes nowhere, allowed for the test: the connect times out.
    started = time.monotonic()
    with pytest.raises(fetcher.FetchError):
        fetcher.fetch(
            "http://192.0.2.1/feed",
            allowed_networks=fetcher.parse_networks(["192.0.2.0/24"]),
            connect_timeout=0.5,
            total_timeout=5,
        )
    assert time.monotonic() - started < 2.5


# --- forbidden addresses ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "localhost",
        "0.0.0.0",
        "0",
        "2130706433",  # 127.0.0.1 as one decimal number
        "0x7f000001",  # ... in hex
        "017700000001",  # ... in octal
        "0177.0.0.1",
        "127.1",
        "[::ffff:127.0.0.1]",  # IPv4-mapped
        "[::ffff:7f00:1]",
    ],
)
def test_loopback_in_any_spelling_is_refused_without_a_connection(feed_server, host):
    feed_server.feed("/feed", rss(guid=GUID))
    with pytest.raises(fetcher.ForbiddenAddress):
        fetcher.fetch(f"http://{host}:{feed_server.port}/feed")
    assert feed_server.connections == 0


def test_ipv6_loopback_is_refused_without_a_connection():
    server = FeedServer("::1").start()
    try:
        server.feed("/feed", rss(guid=GUID))
        with pytest.raises(fetcher.ForbiddenAddress):
            fetcher.fetch(server.url("/feed"))
        assert server.connections == 0
        # The same server is reachable when allowed: the refusal was the check's.
        assert fetcher.fetch(
            server.url("/feed"), allowed_networks=fetcher.parse_networks(["::1/128"])
        ).body
        assert server.connections == 1
    finally:
        server.stop()


@pytest.fixture
def no_connections(monkeypatch):
    """Record every connection attempt, and make none."""
    made = []

    def connect(*args, **kwargs):
        made.append(args)
        raise ConnectionRefusedError("no connections in this test")

    monkeypatch.setattr(socket, "create_connection", connect)
    return made


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",  # cloud metadata
        "http://10.0.0.1/feed",
        "http://172.16.0.1/feed",
        "http://192.168.1.1/feed",
        "http://100.64.0.1/feed",  # carrier-grade NAT
        "http://224.0.0.1/feed",  # multicast
        "http://240.0.0.1/feed",  # reserved
        "http://255.255.255.255/feed",
        "http://[fe80::1]/feed",  # link-local
        "http://[fc00::1]/feed",  # unique local
        "http://[ff02::1]/feed",  # multicast
        "http://[::]/feed",
        "http://[::ffff:169.254.169.254]/feed",
        "http://[64:ff9b::a00:1]/feed",  # NAT64 of 10.0.0.1
        "http://[2002:a00:1::]/feed",  # 6to4 of 10.0.0.1
        "https://10.0.0.1/feed",
    ],
)
def test_private_addresses_are_refused_without_a_connection(no_connections, url):
    with pytest.raises(fetcher.ForbiddenAddress):
        fetcher.fetch(url)
    assert no_connections == []


def test_a_redirect_to_loopback_is_refused_without_a_connection():
    # The first hop is allowed (127.0.0.2 only); it redirects to 127.0.0.1, which is not.
    target = FeedServer("127.0.0.1").start()
    first = FeedServer("127.0.0.2").start()
    try:
        target.feed("/feed", rss(guid=GUID))
        first.redirect("/feed", target.url("/feed"))
        with pytest.raises(fetcher.ForbiddenAddress):
            fetcher.fetch(
                first.url("/feed"), allowed_networks=fetcher.parse_networks(["127.0.0.2/32"])
            )
        assert first.connections == 1
        assert target.connections == 0
    finally:
        first.stop()
        target.stop()


def fake_dns(monkeypatch, addresses):
    """Every name resolves to `addresses`; an address still resolves to itself (as
    socket.create_connection asks)."""
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        with contextlib.suppress(ValueError):
            ipaddress.ip_address(host)
            return real(host, port, *args, **kwargs)
        return [
            (socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port))
            for a in addresses
        ]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def test_a_name_with_any_private_address_is_refused(monkeypatch, no_connections):
    fake_dns(monkeypatch, ["93.184.216.34", "10.0.0.1"])
    with pytest.raises(fetcher.ForbiddenAddress, match=r"10\.0\.0\.1"):
        fetcher.fetch("http://feeds.example.com/rss")
    assert no_connections == []


def test_the_connection_goes_to_the_checked_address(monkeypatch, no_connections):
    """Resolved once: the address checked is the address connected to (no DNS rebinding)."""
    fake_dns(monkeypatch, ["93.184.216.34"])
    with pytest.raises(fetcher.FetchError):
        fetcher.fetch("http://feeds.example.com/rss")
    assert no_connections == [(("93.184.216.34", 80),)]


def black_hole(address: str, port: int = 0) -> list[socket.socket]:
    """A listener at `address` whose accept queue is full, and the connections that fill it: the
    kernel drops every new SYN, so a connect there hangs until it times out, as at an address
    behind a firewall that drops packets. The listener comes first."""
    listener = socket.socket()
    listener.bind((address, port))
    listener.listen(0)
    held = [listener]
    while True:  # connections nobody accepts, until the next one hangs
        client = socket.socket()
        client.settimeout(0.2)
        try:
            client.connect(listener.getsockname())
        except TimeoutError:
            client.close()
            return held
        held.append(client)


@pytest.fixture
def black_holes():
    """Eight black holes on one port, at 127.0.0.1 to 127.0.0.8: (addresses, port)."""
    addresses = [f"127.0.0.{n}" for n in range(1, 9)]
    held = black_hole(addresses[0])
    port = held[0].getsockname()[1]
    for address in addresses[1:]:
        held += black_hole(address, port)
    yield addresses, port
    for sock in held:
        sock.close()


@pytest.fixture
def connects(monkeypatch):
    """The addresses the fetcher connects to, in order (the connections are made)."""
    tried = []
    connect = socket.create_connection

    def recorded(address, *args, **kwargs):
        tried.append(address[0])
        return connect(address, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", recorded)
    return tried


def test_addresses_that_never_answer_end_the_fetch_at_its_deadline(
    monkeypatch, black_holes, connects
):
    """Each connect gets the connect timeout or what is left of the deadline, whichever is less:
    before, 8 such addresses held a fetch 8 connect timeouts."""
    addresses, port = black_holes
    fake_dns(monkeypatch, addresses)
    started = time.monotonic()
    with pytest.raises(fetcher.FetchError) as failed:
        fetch(f"http://feeds.example.com:{port}/feed", connect_timeout=1, total_timeout=1.5)
    took = time.monotonic() - started
    assert took < 1.5 + 0.3, took
    assert str(failed.value).startswith("Timed out")
    assert connects == addresses[:2]  # the second connect had half a second


def test_at_most_three_addresses_are_tried(monkeypatch, black_holes, connects):
    addresses, port = black_holes
    fake_dns(monkeypatch, addresses)
    with pytest.raises(fetcher.FetchError, match=r"Cannot connect to feeds\.example\.com"):
        fetch(f"http://feeds.example.com:{port}/feed", connect_timeout=0.2, total_timeout=10)
    assert connects == addresses[:3]


def test_the_next_address_is_tried_when_one_never_answers(monkeypatch, feed_server, connects):
    held = black_hole("127.0.0.2", feed_server.port)
    try:
        fake_dns(monkeypatch, ["127.0.0.2", "127.0.0.1"])
        feed_server.feed("/feed", rss(guid=GUID))
        got = fetch(f"http://feeds.example.com:{feed_server.port}/feed", connect_timeout=0.5)
    finally:
        for sock in held:
            sock.close()
    assert got.body == rss(guid=GUID)
    assert connects == ["127.0.0.2", "127.0.0.1"]


def test_a_lookup_that_never_answers_ends_at_the_deadline(monkeypatch):
    """getaddrinfo cannot be interrupted: the fetch stops waiting for it at the deadline."""
    answered = threading.Event()

    def hanging(*args, **kwargs):
        answered.wait(30)
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")

    monkeypatch.setattr(socket, "getaddrinfo", hanging)
    started = time.monotonic()
    try:
        with pytest.raises(fetcher.FetchError, match=r"^Timed out resolving feeds\.example\.com$"):
            fetch("http://feeds.example.com/feed", connect_timeout=5, total_timeout=1)
    finally:
        answered.set()
    took = time.monotonic() - started
    assert took < 1 + 0.3, took


def test_a_slow_lookup_leaves_the_rest_of_the_deadline(monkeypatch, feed_server):
    """The lookup's time counts against the deadline, and what is left is still the fetch's."""
    feed_server.feed("/feed", rss(guid=GUID))
    real = socket.getaddrinfo

    def slow(host, port, *args, **kwargs):
        if host == "feeds.example.com":
            time.sleep(0.5)
            host = "127.0.0.1"
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", slow)
    got = fetch(f"http://feeds.example.com:{feed_server.port}/feed", total_timeout=2)
    assert got.body == rss(guid=GUID)


def test_the_host_header_names_the_host(feed_server, monkeypatch):
    seen = []

    def route(handler):
        seen.append(handler.headers["Host"])
        handler.send_response(200)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    feed_server.routes["/feed"] = route
    fake_dns(monkeypatch, ["127.0.0.1"])
    fetch(f"http://feeds.example.com:{feed_server.port}/feed")
    assert seen == [f"feeds.example.com:{feed_server.port}"]


@pytest.mark.parametrize(
    ("address", "allowed"),
    [
        ("93.184.216.34", True),
        ("2606:2800:220:1:248:1893:25c8:1946", True),
        ("127.0.0.1", False),
        ("0.0.0.0", False),
        ("::1", False),
        ("::ffff:10.0.0.1", False),
        ("::ffff:93.184.216.34", False),  # every IPv4-mapped form is refused
        ("169.254.169.254", False),
    ],
)
def test_address_allowed(address, allowed):
    assert fetcher.address_allowed(ipaddress.ip_address(address)) is allowed


def test_the_allowlist_opens_only_what_it_names():
    allowed = fetcher.parse_networks(["127.0.0.0/8", " "])
    assert fetcher.address_allowed(ipaddress.ip_address("127.0.0.5"), allowed)
    assert not fetcher.address_allowed(ipaddress.ip_address("10.0.0.1"), allowed)
    assert not fetcher.address_allowed(ipaddress.ip_address("::1"), allowed)


# --- https: the pinned address, SNI and the certificate checked against the host name ---------


class TlsFeedServer(FeedServer):
    """A FeedServer speaking TLS with certificates from `ca`; records the SNI names it gets."""

    def __init__(self, ca: trustme.CA):
        super().__init__()
        self.ca = ca
        self.names: list[str] = []
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.sni_callback = self._remember
        self.server.socket = self.context.wrap_socket(self.server.socket, server_side=True)

    def _remember(self, sock: ssl.SSLObject, name: str, context: ssl.SSLContext) -> None:
        self.names.append(name)

    def issue(self, name: str) -> None:
        self.ca.issue_cert(name).configure_cert(self.context)


@pytest.fixture
def tls_feed_server(monkeypatch, tmp_path):
    """On 127.0.0.1, with certificates from a CA that only this test trusts."""
    ca = trustme.CA()
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))  # read by ssl.create_default_context()
    server = TlsFeedServer(ca)
    server.start()
    yield server
    server.stop()


LOCALHOST = fetcher.parse_networks(["127.0.0.0/8", "::1/128"])


def test_https_reaches_the_checked_address_with_sni_and_a_checked_certificate(tls_feed_server):
    tls_feed_server.issue("localhost")
    tls_feed_server.feed("/feed", rss(guid=GUID))

    got = fetch(f"https://localhost:{tls_feed_server.port}/feed", allowed_networks=LOCALHOST)

    assert got.body == rss(guid=GUID)
    assert "localhost" in tls_feed_server.names


def test_https_with_a_certificate_for_another_name_is_refused(tls_feed_server):
    tls_feed_server.issue("feeds.example")
    tls_feed_server.feed("/feed", rss(guid=GUID))

    with pytest.raises(fetcher.FetchError, match="certificate"):
        fetch(f"https://localhost:{tls_feed_server.port}/feed", allowed_networks=LOCALHOST)

    assert tls_feed_server.requests == []


def test_an_https_drip_with_connection_close_is_cut_at_the_total_timeout(tls_feed_server):
    """Over TLS the socket http.client drops is the TLS one: the deadline must reach it too."""
    tls_feed_server.issue("localhost")
    tls_feed_server.drip("/drip", every=1, close=True, seconds=20)
    started = time.monotonic()
    with pytest.raises(fetcher.FetchError, match="Timed out"):
        fetch(
            f"https://localhost:{tls_feed_server.port}/drip",
            allowed_networks=LOCALHOST,
            connect_timeout=5,
            total_timeout=2,
        )
    took = time.monotonic() - started
    assert took < 2 + 1, took


@pytest.fixture
def handshake_dripper():
    """A port on 127.0.0.1 whose server answers a TLS ClientHello with the start of a 16 KiB
    handshake record, then one more byte of it a second: for 20 s at most, or until the client
    hangs up, or the test ends."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(10)
    done = threading.Event()

    def serve():
        with contextlib.suppress(OSError), listener.accept()[0] as conn:
            conn.recv(65536)  # the ClientHello
            conn.sendall(b"\x16\x03\x03\x40\x00")
            for _ in range(20):
                if done.is_set() or select.select([conn], [], [], 1)[0]:
                    return  # readable: the client hung up
                conn.sendall(b"\x02")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    done.set()
    thread.join(timeout=15)
    listener.close()


@pytest.mark.parametrize(
    "connect_takes", [1.5, 2.5], ids=["connected-in-time", "deadline-passed-while-connecting"]
)
def test_a_dripped_tls_handshake_is_cut_at_the_total_timeout(
    monkeypatch, handshake_dripper, connect_takes
):
    """The deadline reaches the socket from the moment it is connected, handshake included: a
    connect that takes most of the time (simulated) leaves no handshake the time it allows."""
    connect = socket.create_connection

    def slow_connect(*args, **kwargs):
        time.sleep(connect_takes)
        return connect(*args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", slow_connect)
    started = time.monotonic()
    with pytest.raises(fetcher.FetchError, match="Timed out"):
        fetch(f"https://127.0.0.1:{handshake_dripper}/feed", connect_timeout=5, total_timeout=2)
    took = time.monotonic() - started
    assert took < 2 + 1, took
