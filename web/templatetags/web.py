"""How the pages word episode actions, durations and apps, and the server's version."""

from typing import Any
from urllib.parse import unquote, urlsplit

from django import template

from core import version
from gpodder.diagnostics import Protocol, app_of
from web.selectors import COUNTED_AT_MOST

register = template.Library()


@register.filter
def duration(seconds: Any) -> str:
    """3725 -> "1:02:05"; 65 -> "1:05"."""
    if not isinstance(seconds, int) or seconds < 0:
        return ""
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02}:{secs:02}" if hours else f"{minutes}:{secs:02}"


@register.filter
def counted(number: int) -> str:
    """A count read up to COUNTED_AT_MOST + 1 (web.selectors), in words: 12,345 is "more than
    10,000"."""
    if number > COUNTED_AT_MOST:
        return f"more than {COUNTED_AT_MOST:,}"
    return f"{number:,}"


@register.filter
def episode_name(episode: str) -> str:
    """An episode URL's file name, which usually names it; a guid stays as it is."""
    parts = urlsplit(episode)
    if parts.scheme in ("http", "https") and parts.path.rstrip("/"):
        return unquote(parts.path.rstrip("/").rsplit("/", 1)[-1]) or episode
    return episode


_DONE = {"download": "Downloaded", "delete": "Deleted", "new": "Marked new", "flattr": "Flattred"}


@register.filter
def action_summary(action: Any) -> str:
    if action.action != "play":
        return _DONE.get(action.action, action.action)
    if action.position is None:
        return "Played"
    told = f"Played to {duration(action.position)}"
    return f"{told} of {duration(action.total)}" if action.total else told


@register.filter
def app_name(agent: str | None) -> str:
    """The app a User-Agent names: "AntennaPod/3.5.0 ..." -> "AntennaPod 3.5.0"."""
    return app_of(agent or "")


@register.filter
def protocol_name(protocol: str | None) -> str:
    """A sync event's protocol in words: "gpodder.net API" or "Nextcloud API"."""
    return str(Protocol(protocol).label) if protocol in Protocol.values else ""


@register.simple_tag
def server_version() -> str:
    """Which software and release a self-hoster runs, e.g. "opa-subscriptions 1.1.0"."""
    return f"{version.NAME} {version.VERSION}"
