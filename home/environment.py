"""The home server's own defaults (docs/self-hosting.md): a secret key kept in the data folder,
and the names a home network reaches the machine by.

Read by the settings (config/settings/base.py) before Django is set up, so nothing here imports
an app.
"""

import contextlib
import grp
import ipaddress
import os
import pwd
import secrets
import socket
from pathlib import Path

import psutil
from django.core.exceptions import ImproperlyConfigured

# Where the start (home.management.commands.serve) reads it, beside the addresses it names.
from home.proxies import in_container as in_container

SECRET_FILE_NAME = "secret_key"
# Every name under these is a home network's own, which no stranger can point at an address of
# their choosing (docs/self-hosting.md, "Names", weighs each against DNS rebinding): mDNS
# (`raspberrypi.local`); what routers give (`nas.lan`, `nas.home`, `nas.localdomain`, a FRITZ!Box's
# `nas.fritz.box`); the names RFC 8375 and ICANN set aside for private use (`podsync.home.arpa`,
# `nas.internal`); Tailscale's MagicDNS names, under each tailnet's own domain of ts.net.
HOME_DOMAINS = (
    ".local",
    ".lan",
    ".home",
    ".home.arpa",
    ".internal",
    ".localdomain",
    ".fritz.box",
    ".ts.net",
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
    except PermissionError:  # most often a first try as root (docs/self-hosting.md)
        raise StartError(not_ours(data_dir, doing="read")) from None
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


def not_ours(folder: Path, *, doing: str = "write") -> str:
    """One line for a folder this user may not read or write in, with the command that gives it
    the folder: most often one a first try as root left behind, which the systemd unit's user
    then meets at every start (docs/self-hosting.md, "Debian with systemd")."""
    me = pwd.getpwuid(os.geteuid()).pw_name
    group = grp.getgrgid(os.getegid()).gr_name
    owner = _owner(folder)
    whose = f"which is {owner}'s" if owner else "which this user may not"
    return (
        f"Cannot {doing} in {folder}, {whose}, and this start runs as {me}: "
        f"sudo chown -R {me}:{group} {folder}"
    )


def _owner(folder: Path) -> str | None:
    """The owner of the folder, or of the first thing in it that is not this user's."""
    with contextlib.suppress(OSError, KeyError):
        for path in [folder, *folder.rglob("*")]:
            if path.stat().st_uid != os.geteuid():
                return pwd.getpwuid(path.stat().st_uid).pw_name
    return None


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


def route_address() -> str | None:
    """The address this machine's default route leaves by: of its addresses, the one the rest of
    the home network most likely reaches, where a container bridge's (podman's 10.88.0.1,
    Docker's 172.17.0.1) would sort first. A UDP socket's connect sends nothing: the kernel only
    looks the route up."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.1", 9))  # TEST-NET-1 (RFC 5737): any address off this network
        return str(probe.getsockname()[0])
    return None


def reachable_hosts(listen: str) -> list[str]:
    """Where a phone on the home network reaches a server listening on `listen`, best first: the
    default route's address, the machine's other addresses, then `<host name>.local` (mDNS,
    which not every phone resolves). `manage.py serve` prints these, and the Connect page gives
    the first when it was opened through localhost (docs/web.md, "Connecting an app")."""
    everywhere = listen in ("0.0.0.0", "::", "")
    addresses = lan_addresses() if everywhere else [listen]
    if listen in ("0.0.0.0", ""):  # IPv4's every interface: an IPv6 address would not answer
        addresses = [address for address in addresses if ":" not in address]
    best = route_address()
    if best in addresses:
        addresses.remove(best)
        addresses.insert(0, best)
    name = host_name()
    return addresses + ([f"{name}.local"] if everywhere and name else [])


def listen_host() -> str:
    """The address gunicorn listens on, from the bind `manage.py serve` hands it
    (GUNICORN_BIND: `0.0.0.0:8000`, `[::]:8000`); every IPv4 interface when it is unset."""
    bind = os.environ.get("GUNICORN_BIND", "")
    host = bind.rsplit(":", 1)[0] if ":" in bind else bind
    return host.strip("[]") or "0.0.0.0"


def host_name() -> str:
    return socket.gethostname().strip().lower()


def home_hosts() -> list[str]:
    """ALLOWED_HOSTS with no configuration: loopback, the machine's host name (alone and under
    `.local`), each of its addresses, and every name under HOME_DOMAINS."""
    hosts = ["localhost", "127.0.0.1", "[::1]", *HOME_DOMAINS]
    name = host_name()
    if name:
        hosts += [name, f"{name}.local"]
    for address in lan_addresses():
        hosts.append(f"[{address}]" if ":" in address else address)
    return list(dict.fromkeys(hosts))
