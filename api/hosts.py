"""The two kinds of `Host` accepted beyond ALLOWED_HOSTS (docs/self-hosting.md, "Names"):

- on the home server, any private, loopback or link-local address: a phone types the address
  of the machine the server runs on, which a container or a machine whose lease changed cannot
  know in advance. A rebinding attack reaches a server through a name it controls, never
  through an address literal, so this opens nothing to it;
- `/health` asked from this machine, as a container's or a monitor's health check asks it,
  whatever name it uses.
"""

import ipaddress
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.http.request import split_domain_port
from django.utils.regex_helper import _lazy_re_compile

# Django's own syntax check of a Host (django.http.request.host_validation_re).
_VALID_HOST = _lazy_re_compile(r"^([a-z0-9.-]+|\[[a-f0-9]*:[a-f0-9.:]+\])(:[0-9]+)?$")


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.removeprefix("[").removesuffix("]"))
    except ValueError:
        return None


# Carrier-grade NAT's shared space, where Tailscale gives each machine its address.
_SHARED = ipaddress.ip_network("100.64.0.0/10")


def _local(ip: ipaddress.IPv4Address | ipaddress.IPv6Address | None) -> bool:
    return ip is not None and (ip.is_private or ip.is_loopback or ip.is_link_local or ip in _SHARED)


def accepted_host(request: HttpRequest) -> str | None:
    """The request's Host when one of the two rules above accepts it, else None (Django's own
    ALLOWED_HOSTS check decides)."""
    host = request.META.get("HTTP_HOST", "")
    if not _VALID_HOST.match(host.lower()):
        return None
    if settings.HOME_SERVER and _local(_address(split_domain_port(host)[0])):
        return host
    peer = _address(request.META.get("REMOTE_ADDR", ""))
    if request.path_info == "/health" and peer is not None and peer.is_loopback:
        return host
    return None


class LocalHostsMiddleware:
    """Accepts the Hosts above before anything asks Django for the request's host."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        host = accepted_host(request)
        if host is not None:
            # This request's host, checked here: what Django's get_host returns once it has
            # checked one against ALLOWED_HOSTS.
            request.get_host = lambda: host  # type: ignore[method-assign]
        return self.get_response(request)
