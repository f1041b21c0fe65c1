"""The `Host`s the service answers (docs/self-hosting.md, "Names"), and the page a refused one
gets.

Beyond ALLOWED_HOSTS (and EXTRA_ALLOWED_HOSTS, which the settings add to it):

- on the home server, any private, loopback or link-local address, and any single-label name
  (`mynas`, `diskstation`): a phone types the address or the bare name of the machine the server
  runs on, which a container (whose own name is not the host's) or a machine whose lease changed
  cannot know in advance. A rebinding attack reaches a server through a public name its attacker
  controls; no public DNS serves an address literal or a name without a dot, so neither opens
  anything to it;
- `/health` asked from this machine, as a container's or a monitor's health check asks it,
  whatever name it uses.

Any other `Host` is refused here, first of all: with the error object on the API paths, with a
page saying which setting adds it elsewhere, and one log line saying the same.
"""

import ipaddress
import logging
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse
from django.http.request import split_domain_port
from django.template.loader import render_to_string
from django.utils.regex_helper import _lazy_re_compile

from api.errors import error_response

logger = logging.getLogger("django.security.DisallowedHost")

# Django's own syntax check of a Host (django.http.request.host_validation_re).
_VALID_HOST = _lazy_re_compile(r"^([a-z0-9.-]+|\[[a-f0-9]*:[a-f0-9.:]+\])(:[0-9]+)?$")
# The most of a refused Host shown on its page or in the log: enough for any real name.
_SHOWN = 100


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.removeprefix("[").removesuffix("]"))
    except ValueError:
        return None


# Carrier-grade NAT's shared space, where Tailscale gives each machine its address.
_SHARED = ipaddress.ip_network("100.64.0.0/10")


def _local(ip: ipaddress.IPv4Address | ipaddress.IPv6Address | None) -> bool:
    return ip is not None and (ip.is_private or ip.is_loopback or ip.is_link_local or ip in _SHARED)


def _home_name(domain: str) -> bool:
    """A name the home server answers whatever ALLOWED_HOSTS says: a local address, or a single
    label (a router's name for the machine, or the host's own name seen from a container)."""
    if _local(_address(domain)):
        return True
    return 0 < len(domain) <= 63 and "." not in domain and not domain.startswith("[")  # a label


def accepted_host(request: HttpRequest) -> str | None:
    """The request's Host when one of the two rules above accepts it, else None (Django's own
    ALLOWED_HOSTS check decides)."""
    host = request.META.get("HTTP_HOST", "")
    if not _VALID_HOST.match(host.lower()):
        return None
    if settings.HOME_SERVER and _home_name(split_domain_port(host)[0]):
        return host
    peer = _address(request.META.get("REMOTE_ADDR", ""))
    if request.path_info == "/health" and peer is not None and peer.is_loopback:
        return host
    return None


def refused_host(request: HttpRequest) -> HttpResponse:
    """The 400 for a Host the service does not answer: the error object on the API paths, else a
    page naming the setting that adds the name (or saying it is no name at all). Logged once."""
    raw = str(request.META.get("HTTP_HOST", ""))
    domain = split_domain_port(raw.lower())[0] if _VALID_HOST.match(raw.lower()) else ""
    if len(domain) > 253:  # longer than any name DNS can hold
        domain = ""
    # Shown as text, never as markup (the template escapes it) nor as control characters.
    shown = "".join(c if c.isprintable() else "?" for c in raw[:_SHOWN])
    shown += "..." if len(raw) > _SHOWN else ""
    if domain:
        logger.warning(
            "Refused the Host %r: add %r to EXTRA_ALLOWED_HOSTS (comma separated) to answer it",
            shown,
            domain,
        )
    else:
        logger.warning("Refused the Host %r: not a host name", shown)
    if request.path_info.startswith(tuple(settings.API_PATH_PREFIXES)):
        return error_response(400, "Bad request: host not allowed")
    page = render_to_string(
        "api/host_refused.html",
        {"host": shown, "domain": domain, "site_name": settings.SITE_NAME},
    )
    response = HttpResponse(page, status=400, content_type="text/html; charset=utf-8")
    # Outside the middleware that would set these (SecurityMiddleware's, CSP's, the caches'):
    # a page of text, nothing loaded, never kept.
    response["Content-Security-Policy"] = "default-src 'none'; frame-ancestors 'none'"
    response["X-Content-Type-Options"] = "nosniff"
    response["Cache-Control"] = "private, no-store"
    return response


class HostsMiddleware:
    """Accepts the Hosts above before anything asks Django for the request's host, and refuses
    every Host that neither they nor ALLOWED_HOSTS accept (refused_host), before any other
    middleware asks for it: Django's own refusal is a bare "Bad Request (400)"."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        host = accepted_host(request)
        if host is not None:
            # This request's host, checked here: what Django's get_host returns once it has
            # checked one against ALLOWED_HOSTS.
            request.get_host = lambda: host  # type: ignore[method-assign]
        else:
            try:
                request.get_host()
            except DisallowedHost:
                return refused_host(request)
        return self.get_response(request)
