"""The home server's own defaults (docs/self-hosting.md): a secret key kept in the data folder,
and the names a home network reaches the machine by.

Read by the settings (config/settings/base.py) before Django is set up, so nothing here imports
an app.
"""

import contextlib
import ipaddress
import os
import secrets
import socket
from pathlib import Path

import psutil
from django.core.exceptions import ImproperlyConfigured

SECRET_FILE_NAME = "secret_key"
# The names under which home routers, mDNS and Tailscale name a household's machines: no public
# DNS answers for them, or only their one owner's (AVM's `fritz.box`, Tailscale's `ts.net`), so
# a stranger cannot point one at this server (docs/self-hosting.md, "Names": DNS rebinding).
HOME_DOMAINS = (
    ".local",  # mDNS: raspberrypi.local
    ".lan",  # OpenWrt and many routers: nas.lan
    ".home",  # many ISP routers: nas.home
    ".home.arpa",  # RFC 8375's, for homes: podsync.home.arpa
    ".internal",  # set aside for private use by ICANN (2024)
    ".localdomain",  # what DHCP on many systems appends
    ".fritz.box",  # AVM's FRITZ!Box routers
    ".ts.net",  # Tailscale's MagicDNS, answered inside the tailnet only
)


class StartError(ImproperlyConfigured):
    """The server cannot start as configured; the message says what to do, in one line."""


def secret_key(data_dir: Path, database: Path, *, new: bool = False) -> str:
    """The key kept in `data_dir`, made there (mode 600) on the first start.

    Made only while there is no database either, unless `new` (NEW_SECRET_KEY) says to: a new
    key beside a database signs everyone out (every session and token ends; passwords and app
    passwords stand), so a lost one stops the start instead, saying what to do. A database made
    before the home server kept a key (1.0.0's `make run`) needs that once.
    """
    path = data_dir / SECRET_FILE_NAME
    try:
        key = path.read_text().strip()
    except FileNotFoundError:
        if database.exists() and not new:
            raise StartError(
                f"{path} is missing but {database} exists: restore the key from your backup, "
                "or start once with NEW_SECRET_KEY=true to make a new one (everyone signs in "
                "again)"
            ) from None
        return _new_secret(path)
    except OSError as exc:
        raise StartError(f"Cannot read {path}: {exc.strerror}; fix its owner or mode") from None
    if not key:
        raise StartError(f"{path} is empty: restore the key from your backup, or set SECRET_KEY")
    return key


def _new_secret(path: Path) -> str:
    key = secrets.token_urlsafe(50)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # O_EXCL: of two first starts at once, the second reads the first's key.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text().strip()
    except OSError as exc:
        raise StartError(f"Cannot write {path}: {exc.strerror}; {_writable_hint(path)}") from None
    try:
        with os.fdopen(fd, "w") as file:
            file.write(key + "\n")
            file.flush()
            os.fsync(file.fileno())
    except OSError as exc:
        with contextlib.suppress(OSError):
            path.unlink()  # never leave an empty key behind for the next start to refuse
        raise StartError(f"Cannot write {path}: {exc.strerror}; {_writable_hint(path)}") from None
    return key


def _writable_hint(path: Path) -> str:
    return f"make {path.parent} writable by the user that runs the server, with free space"


def lan_addresses() -> list[str]:
    """The machine's own addresses, IPv4 first, loopback and link-local left out."""
    found: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = []
    with contextlib.suppress(OSError):
        for entries in psutil.net_if_addrs().values():
            for entry in entries:
                if entry.family not in (socket.AF_INET, socket.AF_INET6):
                    continue
                try:
                    ip = ipaddress.ip_address(entry.address.split("%", 1)[0])
                except ValueError:
                    continue
                if not (ip.is_loopback or ip.is_link_local or ip.is_multicast) and ip not in found:
                    found.append(ip)
    found.sort(key=lambda ip: (ip.version, int(ip)))
    return [str(ip) for ip in found]


def in_container() -> bool:
    """Whether this runs in the service's image (its Containerfile sets IN_CONTAINER): its
    addresses and name are then the container's own, which no phone reaches."""
    return os.environ.get("IN_CONTAINER", "").lower() in ("1", "true", "yes")


def host_name() -> str:
    return socket.gethostname().strip().lower()


def home_hosts() -> list[str]:
    """ALLOWED_HOSTS with no configuration: loopback, the machine's host name (alone and under
    `.local`), each of its addresses, and every name under HOME_DOMAINS. Single-label names and
    private addresses are accepted beside these, whatever ALLOWED_HOSTS says (api.hosts)."""
    hosts = ["localhost", "127.0.0.1", "[::1]", *HOME_DOMAINS]
    name = host_name()
    if name:
        hosts += [name, f"{name}.local"]
    for address in lan_addresses():
        hosts.append(f"[{address}]" if ":" in address else address)
    return list(dict.fromkeys(hosts))
