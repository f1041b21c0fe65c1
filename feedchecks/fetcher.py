"""Fetching a feed from an address a user gave us, without letting it reach our own network.

OWASP API7 (server-side request forgery): any user can make the server fetch any URL, so every
fetch is confined. Only http and https; the host is resolved once and every address it resolves
to must be public (or inside FEED_FETCH_ALLOWED_NETWORKS); the connection goes to the address
that was checked, never to the name again, so DNS rebinding cannot swap it; redirects are
followed by hand, each hop checked the same way, at most MAX_REDIRECTS; a connect timeout, a
total deadline that neither a slow name server, addresses that never answer, nor a server dripping
one byte at a time can stretch (in the lookup, the connects, the TLS handshake, the headers or the
body), and a body cap.
"""

import contextlib
import http.client
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import IO, Any
from urllib.parse import urljoin, urlsplit

from subscriptions import feeds

MAX_REDIRECTS = 3
# The addresses of a host tried, in the resolver's order. Each one that drops SYNs costs a connect
# timeout: a name resolving to many such addresses would spend the whole deadline on them. Three
# cover a dual-stack host (its IPv6 and IPv4 addresses) with one to spare.
MAX_ADDRESSES = 3
PERMANENT_REDIRECTS = frozenset({301, 308})
REDIRECTS = frozenset({301, 302, 303, 307, 308})
USER_AGENT = "opa-subscriptions feed identity check"

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# NAT64's well-known prefix carries an IPv4 address in its last 32 bits.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


class FetchError(Exception):
    """The feed could not be fetched; the message says why, for staff to read. Each kind of
    failure a person is told about in words has a class of its own (FeedCheck.Failure)."""


class ForbiddenAddress(FetchError):
    """The URL leads to an address the fetcher must not connect to (`address`, when known)."""

    def __init__(self, message: str, address: IPAddress | None = None) -> None:
        super().__init__(message)
        self.address = address


class CannotResolve(FetchError):
    """The host's name has no address."""


class CannotConnect(FetchError):
    """No address of the host accepted a connection."""


class TimedOut(FetchError):
    """The fetch's deadline passed: in the lookup, a connect, or while the server sent."""


class TLSFailure(FetchError):
    """The TLS handshake failed: a certificate that does not check out, most often."""


class HTTPStatusError(FetchError):
    """The server answered with a status other than 200 and no redirect to follow."""

    def __init__(self, status: int):
        super().__init__(f"HTTP {status}")
        self.status = status


class BadRedirect(FetchError):
    """Too many redirects, or one to an address that may not be fetched."""


@dataclass(frozen=True)
class Fetched:
    """What one fetch found.

    `permanent_url` is where the feed permanently lives (the last URL reached through 301 and 308
    redirects alone) when that differs from the URL asked for, else None; `final_url` is the
    URL that answered. `truncated` says the body was cut at the cap.
    """

    url: str
    final_url: str
    permanent_url: str | None
    body: bytes
    truncated: bool


def parse_networks(values: Iterable[str]) -> list[IPNetwork]:
    """The allowlist setting: CIDRs such as `127.0.0.0/8`, `::1/128`."""
    return [ipaddress.ip_network(value.strip(), strict=False) for value in values if value.strip()]


def _embedded_ipv4(ip: IPAddress) -> list[ipaddress.IPv4Address]:
    """IPv4 addresses an IPv6 address carries (mapped, 6to4, Teredo, NAT64)."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return []
    found = []
    if ip.ipv4_mapped is not None:
        found.append(ip.ipv4_mapped)
    if ip.sixtofour is not None:
        found.append(ip.sixtofour)
    if ip.teredo is not None:
        found.extend(ip.teredo)
    if ip in _NAT64:
        found.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return found


def _is_public(ip: IPAddress) -> bool:
    return (
        ip.is_global
        and not (
            ip.is_private
            or ip.is_loopback
            or ip.is_link_local
            or ip.is_multicast
            or ip.is_reserved
            or ip.is_unspecified
            or (isinstance(ip, ipaddress.IPv6Address) and ip.is_site_local)
        )
        and all(_is_public(inner) for inner in _embedded_ipv4(ip))
    )


def address_allowed(ip: IPAddress, allowed_networks: Sequence[IPNetwork] = ()) -> bool:
    """Whether the fetcher may connect to `ip`: a public address, or one the allowlist names."""
    if any(ip.version == net.version and ip in net for net in allowed_networks):
        return True
    return _is_public(ip)


def host_refused(host: str, allowed_networks: Sequence[IPNetwork] = ()) -> bool:
    """Whether every fetch of `host` will be refused, known without a lookup: an address (in any
    numeric spelling the system reads, as resolve() reads it) or a localhost name (answered with
    loopback, RFC 6761) that address_allowed refuses. A name is never looked up here: where it
    leads is learnt by the fetch."""
    name = host.lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return not address_allowed(ipaddress.IPv4Address("127.0.0.1"), allowed_networks)
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)
    except (OSError, UnicodeError):
        return False  # a name
    addresses = [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos]
    return any(not address_allowed(ip, allowed_networks) for ip in addresses)


def resolve(
    host: str, port: int, allowed_networks: Sequence[IPNetwork], *, timeout: float
) -> list[IPAddress]:
    """Every address `host` resolves to, each checked; ForbiddenAddress when any one fails.
    FetchError when the lookup takes more than `timeout` seconds.

    One forbidden address refuses the whole host: a name that resolves to a public and a private
    address is an attempt to reach the private one. Numeric spellings (`2130706433`, `0x7f.1`,
    `0177.0.0.1`) are resolved by the system like any name, so they are checked as what they
    really are.
    """
    infos = _lookup(host, port, timeout)
    addresses: list[IPAddress] = []
    for info in infos:
        # A scoped IPv6 address comes as "fe80::1%eth0".
        ip = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        if not address_allowed(ip, allowed_networks):
            raise ForbiddenAddress(f"{host} resolves to {ip}, which may not be fetched", ip)
        if ip not in addresses:
            addresses.append(ip)
    if not addresses:
        raise CannotResolve(f"Cannot resolve {host}: no address")
    return addresses


def _lookup(host: str, port: int, timeout: float) -> list[Any]:
    """getaddrinfo, given up after `timeout` seconds.

    getaddrinfo cannot be interrupted, and the system resolver's own timeouts and retries can
    add up to longer than a whole fetch may take: it runs on a daemon thread, which a lookup
    still hanging at the deadline is left to finish on its own (its answer unused).
    """
    outcome: list[Any] = []

    def look_up() -> None:
        try:
            outcome.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except (OSError, UnicodeError) as exc:
            outcome.append(exc)

    thread = threading.Thread(target=look_up, name="feedcheck-lookup", daemon=True)
    thread.start()
    thread.join(timeout)
    if not outcome:
        raise TimedOut(f"Timed out resolving {host}")
    (found,) = outcome
    if isinstance(found, Exception):
        raise CannotResolve(f"Cannot resolve {host}: {found}") from found
    return list(found)


class Deadline:
    """The total time a fetch may take, however slowly the server sends."""

    def __init__(self, seconds: float):
        self.end = time.monotonic() + seconds

    def remaining(self) -> float:
        left = self.end - time.monotonic()
        if left <= 0:
            raise TimedOut("Timed out")
        return left

    @property
    def passed(self) -> bool:
        return time.monotonic() >= self.end


class _PinnedConnection(http.client.HTTPConnection):
    """An HTTP connection to an address checked beforehand; `Host` still names the host.

    It keeps its own reference to the socket it opened (`opened`): http.client sets `sock` to None
    as soon as a response says `Connection: close`, while that response goes on reading from the
    socket, so the deadline must act on the socket itself.
    """

    def __init__(
        self,
        host: str,
        port: int,
        *,
        addresses: Sequence[IPAddress],
        timeout: float,
        deadline: Deadline,
    ):
        super().__init__(host, port, timeout=timeout)
        self.addresses = addresses
        self.connect_timeout = timeout
        self.deadline = deadline
        self.opened: socket.socket | None = None
        self.expired = False

    def _open(self) -> socket.socket:
        """A socket connected to the first of the first MAX_ADDRESSES addresses that answers.

        Each connect gets the connect timeout or what is left of the deadline, whichever is less,
        so addresses that never answer end the fetch at its deadline, not one timeout each later.
        """
        error: OSError | None = None
        for ip in self.addresses[:MAX_ADDRESSES]:
            try:
                sock = socket.create_connection(
                    (str(ip), self.port),
                    timeout=min(self.connect_timeout, self.deadline.remaining()),
                )
            except OSError as exc:
                error = exc
            else:
                return self._keep(sock)
        if self.deadline.passed:
            raise TimedOut(f"Timed out connecting to {self.host}")
        raise CannotConnect(f"Cannot connect to {self.host}: {error}")

    def _keep(self, sock: socket.socket) -> socket.socket:
        self.opened = sock
        if self.expired:  # the deadline passed before there was a socket to shut
            _shut(self)
        return sock

    def connect(self) -> None:
        self.sock = self._open()

    def settimeout(self, seconds: float) -> None:
        """The timeout of each read from now on."""
        if self.opened is not None:
            self.opened.settimeout(seconds)


class _PinnedHTTPSConnection(_PinnedConnection):
    """TLS to the checked address, with SNI and the certificate checked against the host name."""

    default_port = http.client.HTTPS_PORT

    def connect(self) -> None:
        context = ssl.create_default_context()
        # Wrapping detaches the plain socket: keep the TLS one before the handshake reads anything.
        sock = context.wrap_socket(
            self._open(), server_hostname=self.host, do_handshake_on_connect=False
        )
        self.sock = self._keep(sock)
        sock.do_handshake()


def _shut(conn: _PinnedConnection) -> None:
    """Unblock a read that has outlived the deadline (called from a timer thread)."""
    conn.expired = True
    sock = conn.opened
    if sock is not None:
        # The plain socket's shutdown: the TLS layer's would race the reading thread.
        with contextlib.suppress(OSError):
            socket.socket.shutdown(sock, socket.SHUT_RDWR)


@dataclass(frozen=True)
class Exchanged:
    """One request's answer, redirects not followed: its status, where a redirect leads, its
    content type, and its body when it is a 200 (cut at the cap, `truncated` then; empty when it
    went to a sink)."""

    status: int
    location: str | None
    content_type: str
    body: bytes
    truncated: bool


def exchange(
    url: str,
    *,
    deadline: Deadline,
    connect_timeout: float,
    max_bytes: int,
    allowed_networks: Sequence[IPNetwork],
    method: str = "GET",
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
    sink: IO[bytes] | None = None,
) -> Exchanged:
    """One request to `url` under every rule of this module (its address checked and pinned,
    the deadline, the cap), without following redirects. A 200's body goes to `sink` when one
    is given (a history of a million actions is not held in memory), else into the answer."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise FetchError(f"Only http and https may be fetched, not {scheme or 'no scheme'}")
    host = parts.hostname or ""
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError as exc:
        raise FetchError(f"Bad URL: {exc}") from exc
    addresses = resolve(host, port, allowed_networks, timeout=deadline.remaining())
    cls = _PinnedHTTPSConnection if scheme == "https" else _PinnedConnection
    conn = cls(host, port, addresses=addresses, timeout=connect_timeout, deadline=deadline)
    timer = threading.Timer(deadline.remaining(), _shut, args=(conn,))
    timer.daemon = True
    timer.start()
    response = None
    try:
        path = parts.path or "/"
        if parts.query:
            path += f"?{parts.query}"
        # No compression: a small gzip body could expand past any cap.
        sent = {**(headers or {}), "Accept-Encoding": "identity", "Connection": "close"}
        conn.request(method, path, body=body, headers=sent)
        response = conn.getresponse()
        content_type = response.getheader("Content-Type") or ""
        if response.status in REDIRECTS:
            location = response.getheader("Location")
            return Exchanged(response.status, location, content_type, b"", False)
        if response.status != 200:
            return Exchanged(response.status, None, content_type, b"", False)
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:
            conn.settimeout(min(connect_timeout, deadline.remaining()))
            chunk = response.read1(min(65536, max_bytes + 1 - size))
            if not chunk:
                break
            size += len(chunk)
            if sink is None:
                chunks.append(chunk)
            else:
                sink.write(chunk[: max(0, max_bytes - (size - len(chunk)))])
        if deadline.passed:  # the timer shut the socket: what came is not the whole body
            raise TimedOut("Timed out")
        whole = b"".join(chunks)
        return Exchanged(response.status, None, content_type, whole[:max_bytes], size > max_bytes)
    except FetchError:
        raise
    except (OSError, http.client.HTTPException, ValueError) as exc:
        if deadline.passed:
            raise TimedOut("Timed out") from exc
        if isinstance(exc, ssl.SSLError):
            raise TLSFailure(f"{type(exc).__name__}: {exc}") from exc
        raise FetchError(f"{type(exc).__name__}: {exc}") from exc
    finally:
        timer.cancel()
        timer.join()  # a _shut under way must not reach a socket closed and reused below
        if response is not None:
            response.close()  # after `Connection: close`, the response alone holds the socket
        conn.close()


def _get_once(
    url: str,
    *,
    deadline: Deadline,
    connect_timeout: float,
    max_bytes: int,
    allowed_networks: Sequence[IPNetwork],
) -> tuple[int, str | None, bytes, bool]:
    """One GET of a feed without following redirects: (status, Location, body, truncated)."""
    answer = exchange(
        url,
        deadline=deadline,
        connect_timeout=connect_timeout,
        max_bytes=max_bytes,
        allowed_networks=allowed_networks,
        headers={
            "User-Agent": USER_AGENT,
            "Accept": "application/rss+xml, application/xml;q=0.9, */*;q=0.1",
        },
    )
    return answer.status, answer.location, answer.body, answer.truncated


def fetch(
    url: str,
    *,
    allowed_networks: Sequence[IPNetwork] = (),
    connect_timeout: float = 5.0,
    total_timeout: float = 20.0,
    max_bytes: int = 5 * 1024 * 1024,
) -> Fetched:
    """GET `url`, following at most MAX_REDIRECTS redirects, each hop checked.

    Raises FetchError (ForbiddenAddress for a refused address) when no feed body was got.
    """
    deadline = Deadline(total_timeout)
    current = home = url
    all_permanent = True
    for _hop in range(MAX_REDIRECTS + 1):
        status, location, body, truncated = _get_once(
            current,
            deadline=deadline,
            connect_timeout=connect_timeout,
            max_bytes=max_bytes,
            allowed_networks=allowed_networks,
        )
        if status == 200:
            return Fetched(
                url=url,
                final_url=current,
                permanent_url=home if home != url else None,
                body=body,
                truncated=truncated,
            )
        if location is None:
            raise HTTPStatusError(status)
        target = urljoin(current, location.strip())
        try:
            feeds.check_feed_url(target)
        except feeds.InvalidFeedUrl as exc:
            raise BadRedirect(f"Redirect to a bad URL: {exc}") from exc
        # The feed's permanent home is the last URL reached by permanent redirects alone: a
        # temporary hop says nothing about where it lives for good.
        if all_permanent and status in PERMANENT_REDIRECTS:
            home = target
        else:
            all_permanent = False
        current = target
    raise BadRedirect(f"More than {MAX_REDIRECTS} redirects")
