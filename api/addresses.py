"""The server address the pages give people to type into an app or a phone (docs/web.md,
"Connecting an app"): the Connect page's, and the sign-in address the People page hands over with
a one-time password. One a phone reaches, which the address the page itself was opened through is
not always."""

import ipaddress
from dataclasses import dataclass, field

from django.conf import settings
from django.http import HttpRequest
from django.http.request import split_domain_port

# Why the address given is not the page's own, for the line the page says it in.
LOOPBACK = "loopback"  # opened on this machine: the LAN address serve found instead
CONTAINER = "container"  # opened on the host of a container, which cannot see the host's address
NOWHERE = "nowhere"  # opened on this machine, which has no address on a network


@dataclass(frozen=True)
class ConnectAddress:
    address: str  # what apps are given, without a trailing slash
    others: list[str] = field(default_factory=list)  # the machine's other addresses, to try
    because: str = ""  # empty: PUBLIC_URL, or the address the page was opened through
    opened: str = ""  # the name or address the page was opened through, when the line names it
    port: str = ""  # and its port


def address_of_request(request: HttpRequest) -> "ConnectAddress":
    """connect_address for the page `request` asks for."""
    return connect_address(
        host=request.get_host(),
        secure=request.is_secure(),
        client=request.META.get("REMOTE_ADDR", ""),
    )


def connect_address(*, host: str, secure: bool, client: str) -> ConnectAddress:
    """PUBLIC_URL when set; else the address the page was opened through (`host`, its Host
    header), unless only this machine knows it: then the first of LAN_HOSTS, the addresses
    `manage.py serve` printed, with the browser's port and scheme, and the others offered."""
    if settings.PUBLIC_URL:
        return ConnectAddress(settings.PUBLIC_URL)
    scheme = "https" if secure else "http"
    own = f"{scheme}://{host}"
    domain, port = split_domain_port(host)
    if not _this_machine_only(domain, client):
        return ConnectAddress(own)
    if settings.IN_CONTAINER:
        default = "443" if secure else "80"
        return ConnectAddress(own, because=CONTAINER, opened=domain, port=port or default)
    if not settings.LAN_HOSTS:
        return ConnectAddress(own, because=NOWHERE, opened=domain)
    suffix = f":{port}" if port else ""
    urls = [f"{scheme}://{f'[{h}]' if ':' in h else h}{suffix}" for h in settings.LAN_HOSTS]
    return ConnectAddress(urls[0], others=urls[1:], because=LOOPBACK, opened=domain)


def _this_machine_only(domain: str, client: str) -> bool:
    """Whether a name or address reaches this machine from itself alone: loopback (`localhost`,
    `*.localhost`, 127.0.0.0/8, ::1), or the machine's bare host name from a browser on this
    machine, which its /etc/hosts answers (Debian's 127.0.1.1) and a phone's DNS only when the
    router happens to know it. The same bare name from another machine works there: it is kept."""
    name = domain.strip("[]").rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        ip = ipaddress.ip_address(name)
    except ValueError:
        return name == settings.HOST_NAME and _loopback(client)
    return ip.is_loopback or (
        ip.version == 6 and bool(ip.ipv4_mapped and ip.ipv4_mapped.is_loopback)
    )


def _loopback(client: str) -> bool:
    try:
        return ipaddress.ip_address(client).is_loopback
    except ValueError:
        return False
