"""The episode actions an app uploads, read strictly: pure functions, no database.

Every rule of docs/gpodder-api.md, "Episode actions: upload" that can be judged from the body
alone lives here, so that a request with one malformed action is refused before anything is
stored, with the action's index in the message.
"""

import functools
import hashlib
import json
import re
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from core.exceptions import InvalidInput

ACTIONS = ("download", "delete", "play", "new", "flattr")
PLAY_FIELDS = ("started", "position", "total")
MAX_TEXT_LENGTH = 2048
# The largest value the database column holds: 68 years of seconds.
MAX_SECONDS = 2**31 - 1
_DEVICE_ID = re.compile(r"[A-Za-z0-9_.\-]{1,64}", re.ASCII)
_PODCAST_SCHEMES = re.compile(r"^(?:feed|itpc|itms)://", re.IGNORECASE)


class ActionError(Exception):
    """What is wrong with one field of one action."""

    def __init__(self, field: str, problem: str):
        self.field, self.problem = field, problem
        super().__init__(f"{field} {problem}")


@dataclass(frozen=True)
class SentAction:
    """One action as the app sent it, its fields checked (URLs not yet sanitised)."""

    podcast: str
    episode: str
    action: str
    timestamp: datetime | None
    device: str | None
    guid: str
    started: int | None = None
    position: int | None = None
    total: int | None = None


def actions_parsed(body: Any, *, limit: int) -> list[SentAction]:
    """The actions of an upload's body (a JSON list of objects), or InvalidInput naming the
    first bad action by its index, and its field."""
    if not isinstance(body, list):
        raise InvalidInput("send a JSON list of episode actions")
    if len(body) > limit:
        raise InvalidInput(
            f"too many episode actions, at most {limit} per request",
            errors={"actions": [f"At most {limit} per request."]},
        )
    parsed = []
    for index, item in enumerate(body):
        try:
            parsed.append(action_parsed(item))
        except ActionError as exc:
            raise InvalidInput(
                f"action {index}: {exc}", errors={str(index): {exc.field: [exc.problem]}}
            ) from None
    return parsed


def action_parsed(item: Any) -> SentAction:
    """One action of a body, or ActionError naming its bad field."""
    if not isinstance(item, dict):
        raise ActionError("action", "must be a JSON object")
    action = _required_text(item, "action").lower()
    if action not in ACTIONS:
        raise ActionError("action", f"must be one of {', '.join(ACTIONS)}")
    numbers = {name: _seconds(item, name) for name in PLAY_FIELDS}
    if action == "play":
        if numbers["position"] is None:
            raise ActionError("position", "is required for a play action")
    elif any(value is not None for value in numbers.values()):
        raise ActionError(
            next(name for name, value in numbers.items() if value is not None),
            "is only for play actions",
        )
    device = _optional_text(item, "device")
    if device and not _DEVICE_ID.fullmatch(device):
        raise ActionError("device", "must be 1 to 64 ASCII letters, digits, '_', '.' or '-'")
    return SentAction(
        podcast=_required_text(item, "podcast"),
        episode=_required_text(item, "episode"),
        action=action,
        timestamp=_timestamp(item),
        device=device or None,
        guid=_optional_text(item, "guid"),
        **numbers,
    )


def _bad_character(ch: str) -> bool:
    # Control characters and lone surrogates, which PostgreSQL text cannot hold (NUL) or UTF-8
    # cannot encode.
    return unicodedata.category(ch) in ("Cc", "Cs")


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise ActionError(name, "must be a string")
    if len(value) > MAX_TEXT_LENGTH:
        raise ActionError(name, f"is longer than {MAX_TEXT_LENGTH} characters")
    # The scan for bad characters only when a quick test finds something other than printable
    # ASCII.
    if not (value.isascii() and value.isprintable()) and any(map(_bad_character, value)):
        raise ActionError(name, "contains control or invalid characters")
    return value


def _required_text(item: dict[str, Any], name: str) -> str:
    value = item.get(name)
    if value is None or value == "":
        raise ActionError(name, "is required")
    return _text(value, name)


def _optional_text(item: dict[str, Any], name: str) -> str:
    """The field's text; "" when absent, null or empty (Kasts sends "" for a guid it lacks)."""
    value = item.get(name)
    return "" if value is None else _text(value, name)


def _seconds(item: dict[str, Any], name: str) -> int | None:
    value = item.get(name)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ActionError(name, "must be whole seconds (an integer)")
    if not 0 <= value <= MAX_SECONDS:
        raise ActionError(name, f"must be from 0 to {MAX_SECONDS}")
    return value


def _timestamp(item: dict[str, Any]) -> datetime | None:
    """ISO 8601; a time without a zone is UTC; fractions and offsets are taken."""
    value = item.get("timestamp")
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ActionError("timestamp", "must be an ISO 8601 string, like 2024-05-01T10:30:00")
    try:
        found = datetime.fromisoformat(value.strip())
        return found.replace(tzinfo=UTC) if found.tzinfo is None else found.astimezone(UTC)
    except (ValueError, OverflowError):
        raise ActionError(
            "timestamp", "must be an ISO 8601 time, like 2024-05-01T10:30:00"
        ) from None


def episode_sanitized(sent: str) -> str | None:
    """The episode URL to use for `sent`, or None when it cannot be used.

    Not a feed URL: the episode is the enclosure's URL, or for some apps the episode's guid
    (mygpoclient documents both), which may have no scheme and spaces inside. So only
    surrounding whitespace goes, and the podcast schemes are read as http://; nothing is added.
    """
    used = _PODCAST_SCHEMES.sub("http://", sent.strip())
    return used or None


def identity(
    *,
    podcast: str,
    episode: str,
    action: str,
    timestamp: datetime,
    device: str | None,
    guid: str,
    started: int | None,
    position: int | None,
    total: int | None,
) -> str:
    """What makes two actions the same action, as a digest the database keeps unique."""
    fields = [
        podcast,
        episode,
        action,
        timestamp.astimezone(UTC).isoformat(),
        device,
        guid,
        started,
        position,
        total,
    ]
    return hashlib.sha256(json.dumps(fields).encode()).hexdigest()


def action_body(action: Any, *, with_device: bool = True) -> dict[str, Any]:
    """A stored action as the apps read it, on the gpodder API and the Nextcloud paths alike:
    UTC time without zone or fraction, the device (`with_device`, when known) and guid when
    known, the play fields on play actions only, and never a null."""
    t = action.timestamp
    body: dict[str, Any] = {
        "podcast": action.podcast,
        "episode": action.episode,
        "action": action.action,
        # %-formatting keeps years before 1000 four digits wide, as mygpoclient parses them.
        "timestamp": "%04d-%02d-%02dT%02d:%02d:%02d"  # noqa: UP031
        % (t.year, t.month, t.day, t.hour, t.minute, t.second),
    }
    if with_device and getattr(action, "device", None) is not None:
        body["device"] = action.device
    if action.guid:
        body["guid"] = action.guid
    if action.action == "play":
        for name in ("started", "position", "total"):
            value = getattr(action, name)
            if value is not None:
                body[name] = value
    return body


@functools.cache
def action_json(vendor: str, *, with_device: bool = True) -> str:
    """action_body as an SQL expression over an action `a` and its device `d`: the JSON text
    the database writes is, byte for byte, orjson's of action_body (the same keys in the same
    order, the same escapes: PostgreSQL's to_json and SQLite's json_quote escape what orjson
    does; tests/episodes/test_action_json.py), so a download's rows need no Python each.
    `%` is doubled, for a statement with parameters."""
    if vendor == "postgresql":
        quote = "to_json({})::text"
        time = "to_char(a.timestamp AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS')"
    else:
        quote = "json_quote({})"
        time = "strftime('%%Y-%%m-%%dT%%H:%%M:%%S', a.timestamp)"
    parts = [
        "'{\"podcast\":' || " + quote.format("a.podcast"),
        "',\"episode\":' || " + quote.format("a.episode"),
        "',\"action\":' || " + quote.format("a.action"),
        f"',\"timestamp\":\"' || {time} || '\"'",
    ]
    if with_device:
        device = quote.format("d.device_id")
        # Not COALESCE: SQLite's json_quote of NULL is the text null.
        parts.append(f"CASE WHEN d.device_id IS NULL THEN '' ELSE ',\"device\":' || {device} END")
    parts.append(f"CASE WHEN a.guid = '' THEN '' ELSE ',\"guid\":' || {quote.format('a.guid')} END")
    play = " || ".join(f"COALESCE(',\"{name}\":' || a.{name}, '')" for name in PLAY_FIELDS)
    parts.append(f"CASE WHEN a.action = 'play' THEN {play} ELSE '' END")
    return "(" + " || ".join(parts) + " || '}')"
