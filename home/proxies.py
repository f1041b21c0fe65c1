"""The peers believed as proxies when TRUSTED_PROXIES is not set (docs/operations.md, "Behind a
proxy"): this machine, and in the service's image the gateway of the container's network, which
is where a proxy on the host reaches the container from.

Read by the settings and by gunicorn's configuration (config/gunicorn.py, which loads this file by
its path) before Django is set up: the standard library only.
"""

import ipaddress
import os
import struct
from pathlib import Path

LOOPBACK = ("127.0.0.1", "::1")
# Where podman (10.88.0.0/16, then 10.89.x.0/24 for each network compose makes) and Docker
# (172.17.0.0/16 up to 172.31.0.0/16) put their bridge networks, the host being each one's
# gateway. A default route elsewhere is not the host's bridge: host networking (the route is the
# LAN's router, and a proxy on the host arrives from loopback anyway), or a rootless runtime's
# user-mode network, through whose gateway every client would arrive.
CONTAINER_NETWORKS = tuple(
    ipaddress.IPv4Network(network) for network in ("10.88.0.0/16", "10.89.0.0/16", "172.16.0.0/12")
)
_ROUTE_GATEWAY = 0x2  # RTF_GATEWAY: the route goes through the gateway it names


def in_container() -> bool:
    """Whether this runs in the service's image (its Containerfile sets IN_CONTAINER): its
    addresses and name are then the container's own, which no phone reaches."""
    return os.environ.get("IN_CONTAINER", "").lower() in ("1", "true", "yes")


def container_gateway(routes: Path = Path("/proc/net/route")) -> str | None:
    """The gateway of the default route (IPv4) when it is a container runtime's bridge, else
    None."""
    try:
        lines = routes.read_text().splitlines()[1:]
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if len(fields) < 4 or fields[1] != "00000000":  # not the default route
            continue
        try:
            gateway, flags = int(fields[2], 16), int(fields[3], 16)
        except ValueError:
            continue
        address = ipaddress.IPv4Address(struct.pack("<I", gateway))  # kept in host byte order
        if flags & _ROUTE_GATEWAY and any(address in net for net in CONTAINER_NETWORKS):
            return str(address)
    return None


def default_trusted_proxies() -> list[str]:
    """TRUSTED_PROXIES when it is not set."""
    gateway = container_gateway() if in_container() else None
    return [*LOOPBACK, gateway] if gateway else list(LOOPBACK)
