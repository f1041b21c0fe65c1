"""Another sync server's history, read over its API (docs/imports.md, "From another server"):
the gpodder.net API v2 (gpodder.net, oPodSync, mygpo, this service) or the Nextcloud gPodder
Sync API, found by asking.

Its small answers (a login, the devices, a device's subscriptions) are read whole, up to
SMALL_ANSWER, and then as the episode actions are, one bounded item at a time (imports.reading):
an answer holding an item past its bound is refused, and nothing but the keys an import uses is
built.

Every request keeps the rules of a feed fetch (feedchecks.fetcher): its address checked and
pinned, private networks refused unless IMPORT_ALLOWED_NETWORKS names them, TLS certificates
verified, one deadline for the whole import however slowly the server sends, and a cap on each
answer. Redirects are followed by hand: each hop is checked again, and none leaves the server's
own host, where the password would go along. The password is used for these requests alone:
never stored, never logged, never shown.
"""

import base64
import contextlib
import io
import ipaddress
import json
import tempfile
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any
from urllib.parse import quote, urljoin, urlsplit

from django.conf import settings

from core.exceptions import DomainError, InvalidInput
from episodes.actions import PLAY_FIELDS
from feedchecks import fetcher
from feedchecks.fetcher import IPNetwork
from imports import reading
from imports.files import json_source
from imports.history import Source, SourceDevice

# The answers an import reads whole (a login, the devices, a device's subscriptions).
SMALL_ANSWER = 10 * 1024 * 1024
USER_AGENT = "opa-subscriptions history import"
_NEXTCLOUD = ("/index.php/apps/gpoddersync", "/apps/gpoddersync")
# The longest server address an import takes.
MAX_ADDRESS = 2048
# gpodder.net's page of episode actions (mygpo's MAX_EPISODE_ACTIONS).
GPODDER_NET_PAGE = 1000
# The pages of episode actions an import reads (gpodder.net's are 1,000 actions each).
MAX_PAGES = 10_000
# The actions at the end of a page that the next one may repeat (a page is 1,000 on gpodder.net).
OVERLAP_KEPT = 1000


class ImportFailed(DomainError):
    """The server could not be read; the message says why, for the person importing."""


@dataclass(frozen=True)
class Account:
    """Where to read from, and as whom. The password lives as long as the import's run."""

    server: str  # the address the person gave: https://gpodder.net, https://cloud.example/...
    username: str
    password: str
    protocol: str = "auto"  # or "gpodder", "nextcloud": which API to read
    # The person said the server is their own, on their own network: on the home server, its
    # private address may then be reached (HOME_NETWORKS).
    own_network: bool = False


def server_address(text: str) -> str:
    """The server's address as typed, checked: http(s), a host, no query; without a trailing
    slash. ImportFailed saying what is wrong."""
    value = text.strip()
    if "://" not in value:
        value = f"https://{value}"
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - read to check it: a port that is not a number raises
    except ValueError:  # an IPv6 address cut short, a port that is not a number
        raise ImportFailed("enter the server's address, like https://gpodder.net") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ImportFailed("enter the server's address, like https://gpodder.net")
    if parts.query or parts.fragment or parts.username or parts.password:
        raise ImportFailed("enter the server's address alone, without a query or a password")
    if len(value) > MAX_ADDRESS:
        raise ImportFailed(f"the server's address is longer than {MAX_ADDRESS} characters")
    return value.rstrip("/")


def _without(network: str, *holes: str) -> list[IPNetwork]:
    kept = [ipaddress.ip_network(network)]
    for hole in map(ipaddress.ip_network, holes):
        kept = [part for net in kept for part in (net.address_exclude(hole)  # type: ignore[arg-type]
                if hole.subnet_of(net) else [net])]  # type: ignore[arg-type]  # fmt: skip
    return kept


# The private networks a household's own servers sit on, which an import from the home server
# reaches once the person confirms the server is their own (docs/imports.md, "A server at
# home"). Loopback and link-local (169.254/16, fe80::/10: where clouds answer with a machine's
# credentials) are not among them, nor the metadata addresses inside these ranges.
HOME_NETWORKS: list[IPNetwork] = [
    *_without("10.0.0.0/8"),
    *_without("172.16.0.0/12"),
    *_without("192.168.0.0/16"),
    *_without("100.64.0.0/10", "100.100.100.200/32"),  # Tailscale; Alibaba Cloud's metadata
    *_without("fc00::/7", "fd00:ec2::254/128"),  # unique local; Amazon's metadata over IPv6
]


class _Client:
    def __init__(self, account: Account, reading: Callable[[str], None]) -> None:
        self.reading = reading
        self.base = server_address(account.server)
        self.origin = urlsplit(self.base)
        token = f"{account.username}:{account.password}".encode()
        self.headers = {
            "Authorization": "Basic " + base64.b64encode(token).decode(),
            "User-Agent": USER_AGENT,
            "Accept": "application/json",
        }
        self.deadline = fetcher.Deadline(settings.IMPORT_TIMEOUT)
        self.networks = fetcher.parse_networks(settings.IMPORT_ALLOWED_NETWORKS)
        self.home = settings.HOME_SERVER
        if self.home and account.own_network:
            self.networks += HOME_NETWORKS
        self.own_network = account.own_network

    def request(
        self,
        method: str,
        path: str,
        what: str,
        *,
        max_bytes: int = SMALL_ANSWER,
        sink: IO[bytes] | None = None,
    ) -> fetcher.Exchanged:
        """One request, its redirects followed where they may be; `what` names what is read, in
        the messages (never the path, which holds the username)."""
        url = self.base + path
        for _hop in range(fetcher.MAX_REDIRECTS + 1):
            try:
                answer = fetcher.exchange(
                    url,
                    method=method,
                    headers=self.headers,
                    body=b"" if method == "POST" else None,
                    deadline=self.deadline,
                    connect_timeout=settings.FEED_FETCH_CONNECT_TIMEOUT,
                    max_bytes=max_bytes,
                    allowed_networks=self.networks,
                    sink=sink,
                )
            except fetcher.FetchError as exc:
                raise ImportFailed(self._failure(exc)) from None
            if answer.location is None:
                if answer.truncated:
                    raise ImportFailed(
                        f"the server's {what} is larger than {max_bytes:,} bytes, the most an "
                        "import reads (IMPORT_MAX_ANSWER_BYTES)"
                    )
                return answer
            url = self._redirect(url, answer.location)
        raise ImportFailed(
            f"the server redirected its {what} more than {fetcher.MAX_REDIRECTS} times"
        )

    def _failure(self, exc: fetcher.FetchError) -> str:
        host = self.origin.hostname or ""
        if isinstance(exc, fetcher.ForbiddenAddress):
            return _refusal(exc, host, home=self.home, own=self.own_network)
        return _failure(exc, host)

    def _redirect(self, url: str, location: str) -> str:
        """Where a redirect leads, if it stays on the server's host (http may become https):
        elsewhere, the password would go along."""
        try:
            target = urljoin(url, location.strip())
            here, there = urlsplit(url), urlsplit(target)
            (here.port, there.port)  # noqa: B018 - read to check them
        except ValueError:
            raise ImportFailed("the server redirected to an address that cannot be read") from None
        same_host = (there.hostname, there.port) == (here.hostname, here.port) or (
            there.hostname == here.hostname
            and here.scheme == "http"
            and there.scheme == "https"
            and there.port in (None, 443)
        )
        if there.scheme not in ("http", "https") or not same_host:
            raise ImportFailed(
                f"the server sent the import to another address ({target[:200]}); if that is "
                "where your account is, enter that address"
            )
        if here.scheme == "https" and there.scheme == "http":
            raise ImportFailed("the server redirected from https to plain http, which is refused")
        return target

    def items(
        self, path: str, what: str, opens: bytes, wanted: dict[str, reading.Item]
    ) -> "_Answer":
        """The items of a small answer that is JSON opening with `opens` (b"[" or b"{"), as
        imports.reading.Items reads them; ImportFailed when it is not, naming `what`."""
        answer = self.request("GET", path, what)
        _refused_status(answer, what)
        first = answer.body.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
        if first == b"<":
            raise ImportFailed(f"the server answered its {what} with a web page, not JSON")
        if first != opens:
            shape = "a list" if opens == b"[" else "a JSON object"
            raise ImportFailed(f"the server's {what} is not {shape}")
        return _Answer(answer.body, wanted, what)


class _Answer(reading.Items):
    """A small answer's items; ImportFailed, naming what it is, when they cannot be read."""

    def __init__(self, body: bytes, wanted: dict[str, reading.Item], what: str) -> None:
        super().__init__(io.BytesIO(body), wanted)
        self.what = what

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        try:
            yield from super().__iter__()
        except InvalidInput as exc:
            raise ImportFailed(f"the server's {self.what}: {_detail(exc)}") from None


def _detail(exc: InvalidInput) -> str:
    return exc.message.removeprefix(f"{InvalidInput.default_message}: ")


def _refused_status(answer: fetcher.Exchanged, what: str) -> None:
    if answer.status in (401, 403):
        raise ImportFailed(
            "the server refused this username and password (HTTP "
            f"{answer.status}); on Nextcloud, use an app password if you have two-factor "
            "sign-in"
        )
    if answer.status == 429:
        raise ImportFailed("the server says too many requests (HTTP 429): try again later")
    if answer.status != 200:
        raise ImportFailed(f"the server answered HTTP {answer.status} for its {what}")


def _refusal(exc: fetcher.ForbiddenAddress, host: str, *, home: bool, own: bool) -> str:
    """What to do about an address an import may not reach, in the person's words."""
    ip = exc.address
    if ip is None or not (ip.is_private or ip in ipaddress.ip_network("100.64.0.0/10")):
        return f"{host} is at an address an import never reaches"
    if ip.is_loopback:
        return (
            f"{host} is this machine itself, which an import never reaches: give the old "
            "server's address on your network instead, like http://192.168.1.50:8080"
        )
    if ip.is_link_local or not any(ip in net for net in HOME_NETWORKS):
        return f"{host} is at {ip}, a link-local or metadata address an import never reaches"
    if home and not own:
        return (
            f"{host} is on a private network: if it is your own server on your own network, "
            f"tick “{OWN_NETWORK_LABEL}” and import again"
        )
    return (
        f"{host} is on a private network, which this server does not reach: its operator can "
        "allow that network with IMPORT_ALLOWED_NETWORKS"
    )


OWN_NETWORK_LABEL = "It is my own server, on my own network"


def _failure(exc: fetcher.FetchError, host: str) -> str:
    if isinstance(exc, fetcher.TimedOut):
        return (
            f"the server took longer than {settings.IMPORT_TIMEOUT:g} seconds, the most an "
            "import waits (IMPORT_TIMEOUT)"
        )
    if isinstance(exc, fetcher.TLSFailure):
        return f"the server's TLS certificate does not check out ({exc})"
    if isinstance(exc, fetcher.CannotResolve):
        return f"{host} cannot be found: check the address"
    if isinstance(exc, fetcher.CannotConnect):
        return f"{host} does not accept connections"
    return f"the server could not be read ({str(exc)[:200]})"


@contextlib.contextmanager
def server_source(
    account: Account, reading: Callable[[str], None] | None = None
) -> Iterator[Source]:
    """The history of `account` on its server, its actions kept in temporary files while the
    import reads them. ImportFailed when the server cannot be read or speaks neither API.
    `reading` is told, in words, what is being read as it goes (for the import's page)."""
    client = _Client(account, reading or (lambda text: None))
    with contextlib.ExitStack() as files:
        user = quote(account.username, safe="")
        if account.protocol in ("auto", "gpodder"):
            login = client.request("POST", f"/api/2/auth/{user}/login.json", "login")
            if login.status != 404 or account.protocol == "gpodder":
                _refused_status(login, "gpodder API login")
                yield _gpodder(client, user, files)
                return
        for root in _NEXTCLOUD:
            first = client.request("GET", f"{root}/subscriptions?since=0", "subscriptions")
            if first.status != 404:
                yield _nextcloud(client, root, files)
                return
        raise ImportFailed(
            "no gpodder.net API and no Nextcloud gPodder Sync app answer at this address"
            if account.protocol == "auto"
            else "no Nextcloud gPodder Sync app answers at this address"
        )


def _gpodder(client: _Client, user: str, files: contextlib.ExitStack) -> Source:
    listed, refused = _devices(client, user)
    devices = []
    for number, item in enumerate(listed, 1):
        client.reading(f"device {number} of {len(listed)}: {item['id'][:64]}")
        device = quote(item["id"], safe="")
        path = f"/api/2/subscriptions/{user}/{device}.json?since=0"
        feeds = _added(client, path, "device's subscriptions")
        devices.append(
            SourceDevice(
                id=item["id"],
                caption=item["caption"] if isinstance(item.get("caption"), str) else "",
                type=item["type"] if isinstance(item.get("type"), str) else "",
                feeds=feeds,
            )
        )
    pages = _pages(client, f"/api/2/episodes/{user}.json?since={{}}", files)
    if pages[-1].refused:
        refused += pages[-1].refused
    return Source(
        kind=f"the gpodder API at {client.origin.hostname}",
        devices=devices,
        actions=lambda: _without_overlap(pages),
        action_count=sum(page.action_count for page in pages),
        refused=refused,
    )


def _devices(client: _Client, user: str) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """The devices of the server's device list that are read (each with an `id`), and those
    refused. No account here holds more than MAX_DEVICES: those past it are not read, but named
    (as many again; the others counted in one line)."""
    kept = settings.MAX_DEVICES
    past = f"past the {kept} devices an account may have (MAX_DEVICES)"
    listed: list[dict[str, Any]] = []
    refused: list[tuple[str, str]] = []
    more = 0
    path = f"/api/2/devices/{user}.json"
    for _place, item in client.items(path, "device list", b"[", {"item": reading.SERVER_DEVICE}):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            continue
        elif len(listed) < kept:
            listed.append(item)
        elif len(refused) < kept:
            refused.append((f"device {item['id'][:64]!r}", past))
        else:
            more += 1
    if more:
        refused.append((f"{more:,} more devices", past))
    return listed, refused


def _without_overlap(pages: list[Source]) -> Iterator[Any]:
    """The actions of every page, less those a page repeats from the end of the one before
    (each page starts at the second the one before ended in): the last OVERLAP_KEPT of each page
    are remembered, so the memory stays flat however long the history."""
    before: set[str] = set()
    for page in pages:
        last: deque[str] = deque(maxlen=OVERLAP_KEPT)
        for item in page.actions():
            key = json.dumps(item, sort_keys=True, default=str)
            if key in before:
                continue
            last.append(key)
            yield item
        before = set(last)


def _nextcloud(client: _Client, root: str, files: contextlib.ExitStack) -> Source:
    client.reading("subscriptions")
    feeds = _added(client, f"{root}/subscriptions?since=0", "subscriptions")
    client.reading("episode actions")
    page, _ = _actions(client, f"{root}/episode_action?since=0", files)
    # Nextcloud's app knows no devices: what it holds comes in as the device this service's
    # Nextcloud paths give the account's own password (docs/nextcloud.md).
    return Source(
        kind=f"the Nextcloud gPodder Sync app at {client.origin.hostname}",
        devices=[SourceDevice(id="nextcloud", feeds=feeds)],
        actions=lambda: map(_nextcloud_action, page.actions()),
        action_count=page.action_count,
    )


def _nextcloud_action(item: Any) -> Any:
    """An action as Nextcloud's app answers it, as an upload would send it: the app keeps a
    missing `started`, `position` or `total` as -1."""
    if isinstance(item, dict):
        return {k: None if k in PLAY_FIELDS and v == -1 else v for k, v in item.items()}
    return item


def _added(client: _Client, path: str, what: str) -> list[str]:
    """The subscriptions of a `since=0` answer: its `add`, of at most MAX_OPML_ENTRIES."""
    limit = settings.MAX_OPML_ENTRIES
    read = client.items(path, what, b"{", {"add.item": reading.SERVER_SUBSCRIPTION})
    feeds: list[str] = []
    for count, (_place, url) in enumerate(read, 1):
        if count > limit:
            raise ImportFailed(
                f"a device there has more than {limit:,} subscriptions; an import takes at most "
                f"{limit:,} a device (MAX_OPML_ENTRIES)"
            )
        if isinstance(url, str):
            feeds.append(url)
    if "add" not in read.lists:
        raise ImportFailed('a subscription answer of the server is not {"add": [...], ...}')
    return feeds


def _pages(client: _Client, path: str, files: contextlib.ExitStack) -> list[Source]:
    """Every page of a gpodder episode-actions answer. gpodder.net answers at most 1,000 actions
    at a time, the earliest first, with the timestamp of the last as its `timestamp`: the next
    page is asked from there (the last actions come again, and are stored once), until an
    answer brings none or its timestamp does not move. A full page whose timestamp does not
    move holds more actions of one second than a page does: those past it cannot be asked for,
    and the last page says so (its `refused`). The pages' bytes together are bounded by
    IMPORT_MAX_ANSWER_BYTES."""
    pages: list[Source] = []
    since, total, size = 0, 0, 0
    while len(pages) < MAX_PAGES:
        client.reading(f"episode actions: {total:,} so far")
        page, read = _actions(client, path.format(since), files, already=(total, size))
        pages.append(page)
        total, size = total + page.action_count, size + read
        if not page.action_count or page.timestamp is None or page.timestamp <= since:
            if since and page.action_count >= GPODDER_NET_PAGE:
                page.refused.append(
                    (
                        "episode actions",
                        f"more than {page.action_count:,} share one second on that server, "
                        "and its API answers no more of them",
                    )
                )
            return pages
        since = page.timestamp
    raise ImportFailed(f"the server's episode actions came in more than {MAX_PAGES:,} pages")


def _actions(
    client: _Client, path: str, files: contextlib.ExitStack, already: tuple[int, int] = (0, 0)
) -> tuple[Source, int]:
    """An episode-actions answer, written to a temporary file and read from there as a stream,
    and its size (`already`: the actions and bytes of the pages before, counted against
    IMPORT_MAX_ACTIONS and IMPORT_MAX_ANSWER_BYTES)."""
    actions, size = already
    # Closed with the import (its ExitStack), once its actions are read.
    sink = files.enter_context(tempfile.TemporaryFile(prefix="import-"))  # noqa: SIM115
    left = settings.IMPORT_MAX_ANSWER_BYTES - size
    answer = client.request("GET", path, "episode actions", max_bytes=left, sink=sink)
    _refused_status(answer, "episode actions")
    read = sink.seek(0, io.SEEK_END)
    try:
        return json_source(sink, max_actions=settings.IMPORT_MAX_ACTIONS - actions), read
    except InvalidInput as exc:
        raise ImportFailed(f"the server's episode actions: {_detail(exc)}") from None
