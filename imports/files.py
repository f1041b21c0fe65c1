"""An import file: which kind it is, and its history (imports.history.Source).

Three kinds, told apart by their content, not their name:
- an OPML file (its first character `<`): subscriptions;
- a gpodder.net episode-actions answer (`{"actions": [...], "timestamp": ...}`, what
  `/api/2/episodes/{user}.json?since=0` returns), or a bare JSON list of actions;
- this service's own export ("Your data": `{"exported": ..., "subscriptions": [...],
  "devices": [...], "episode_actions": [...]}`).

A JSON file is read through once before anything is written, as a stream: a file that is not
JSON, or not of one of these shapes, or holds more actions than the import takes, is refused
whole, and nothing is written.
"""

import io
from collections.abc import Iterator
from typing import IO, Any

import ijson
from django.conf import settings

from core.exceptions import InvalidInput
from imports.history import Source, SourceDevice
from subscriptions import opml

# Where each JSON kind keeps its actions (ijson's prefixes).
_ACTIONS = {"list": "item", "gpodder": "actions.item", "export": "episode_actions.item"}
_EXPORT_KEYS = {"exported", "subscriptions", "devices", "episode_actions"}
# No file of any kind nests deeper (an export: its document, a list, an entry, a history).
MAX_DEPTH = 16
# The export's subscriptions and devices are read whole (the actions alone are streamed).
MAX_EXPORT_ITEMS = 100_000


def file_source(file: IO[bytes], *, max_actions: int) -> Source:
    """The history in `file` (seekable: it is read more than once), or InvalidInput saying why
    it cannot be imported."""
    first = _first_character(file)
    if first == b"<":
        # Read whole, as the OPML import reads one, within the same bounds.
        size = file.seek(0, io.SEEK_END)
        if size > settings.MAX_BODY_BYTES:
            raise InvalidInput(
                f"this OPML file is larger than {settings.MAX_BODY_BYTES:,} bytes, the most an "
                "import reads of one (MAX_BODY_BYTES)"
            )
        file.seek(0)
        feeds = opml.opml_parse(file.read())
        _within_entries(len(feeds), "this OPML file")
        return Source(kind="an OPML file", feeds=[feed.url for feed in feeds])
    if first not in (b"[", b"{"):
        raise InvalidInput(
            "this is neither an OPML file nor a JSON file of episode actions or of this "
            "service's export"
        )
    return json_source(file, max_actions=max_actions)


def json_source(file: IO[bytes], *, max_actions: int) -> Source:
    """The history in a JSON `file` (seekable): episode actions, or this service's export."""
    first = _first_character(file)
    if first == b"<":
        raise InvalidInput("this is a web page or XML, not JSON")
    if first not in (b"[", b"{"):
        raise InvalidInput("this is not JSON")
    shape, counts, timestamp = _scanned(file)
    kind = "list" if first == b"[" else shape
    if kind is None:
        raise InvalidInput(
            'this JSON is neither a gpodder.net episode-actions answer ({"actions": [...]}) '
            "nor this service's export"
        )
    count = counts[_ACTIONS[kind]]
    if count > max_actions:
        raise InvalidInput(
            f"this holds {count:,} episode actions; an import takes at most "
            f"{max_actions:,} (IMPORT_MAX_ACTIONS)"
        )

    def actions() -> Iterator[Any]:
        file.seek(0)
        yield from ijson.items(file, _ACTIONS[kind], use_float=True)

    if kind != "export":
        described = "a gpodder.net episode-actions file" if kind == "gpodder" else "a JSON list"
        return Source(kind=described, actions=actions, action_count=count, timestamp=timestamp)
    feeds = _export_feeds(file)
    return Source(
        kind="an export of this service",
        feeds=list(feeds),
        guids={url: guid for url, guid in feeds.items() if guid},
        devices=_export_devices(file),
        actions=actions,
        action_count=count,
    )


def _first_character(file: IO[bytes]) -> bytes:
    file.seek(0)
    head = file.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")  # a byte-order mark, whitespace
    file.seek(0)
    return head[:1]


def _scanned(file: IO[bytes]) -> tuple[str | None, dict[str, int], int | None]:
    """Read the whole file as JSON events: its shape (from its top-level keys) and how many
    objects each place that may hold actions holds, and its top-level `timestamp`. InvalidInput
    when it is not JSON, or nests deeper than MAX_DEPTH.

    ijson's basic events, without their prefixes: a prefix is made for each event at its depth,
    and a file of a hundred thousand `[` would cost gigabytes in them. Once a file has passed
    here, reading it with prefixes (ijson.items) is safe."""
    counts = dict.fromkeys(_ACTIONS.values(), 0)
    keys: set[str] = set()
    # Each open container: the key being read in a map (None in an array).
    stack: list[str | None] = []
    timestamp = None
    file.seek(0)
    try:
        for event, value in ijson.basic_parse(file, use_float=True):
            if event not in ("end_map", "end_array", "map_key"):
                place = _place(stack)  # every item counts, whatever it is
                if place in counts:
                    counts[place] += 1
            if event in ("start_map", "start_array"):
                stack.append("" if event == "start_map" else None)
                if len(stack) > MAX_DEPTH:
                    raise InvalidInput(f"this nests deeper than {MAX_DEPTH} levels")
            elif event in ("end_map", "end_array"):
                stack.pop()
            elif event == "map_key":
                stack[-1] = value
                if len(stack) == 1:
                    keys.add(value)
            elif event == "number" and stack == ["timestamp"] and isinstance(value, int):
                timestamp = value
    except (ijson.JSONError, ValueError) as exc:
        raise InvalidInput(f"this is not valid JSON ({_short(exc)})") from None
    if keys & (_EXPORT_KEYS - {"exported"}) and "actions" not in keys:
        return "export", counts, timestamp
    if "actions" in keys:
        return "gpodder", counts, timestamp
    return None, counts, timestamp


def _place(stack: list[str | None]) -> str:
    """Where a value opening now sits, as ijson's prefix of it: "item", "actions.item"..."""
    return ".".join("item" if key is None else key for key in stack)


def _short(exc: Exception) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:200]


def _items(file: IO[bytes], prefix: str) -> list[Any]:
    file.seek(0)
    found = []
    for item in ijson.items(file, prefix, use_float=True):
        found.append(item)
        if len(found) > MAX_EXPORT_ITEMS:
            raise InvalidInput(f"more than {MAX_EXPORT_ITEMS:,} {prefix.split('.')[0]}")
    return found


def _within_entries(count: int, what: str) -> None:
    limit = settings.MAX_OPML_ENTRIES
    if count > limit:
        raise InvalidInput(
            f"{what} holds {count:,} subscriptions; an import takes at most {limit:,} "
            "(MAX_OPML_ENTRIES)"
        )


def _export_feeds(file: IO[bytes]) -> dict[str, str | None]:
    """The export's current subscriptions (subscribed, not deleted), each with its guid: the
    others are history the export keeps, which an import does not bring back as subscriptions."""
    current = {
        item["feed_url"]: item["guid"] if isinstance(item.get("guid"), str) else None
        for item in _items(file, "subscriptions.item")
        if isinstance(item, dict)
        and isinstance(item.get("feed_url"), str)
        and item.get("is_subscribed") is True
        and item.get("deleted") is None
    }
    _within_entries(len(current), "this export")
    return current


def _export_devices(file: IO[bytes]) -> list[SourceDevice]:
    devices = []
    for item in _items(file, "devices.item"):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            continue
        spellings = item.get("feed_url_spellings")
        devices.append(
            SourceDevice(
                id=item["id"],
                caption=_text(item.get("caption")),
                type=_text(item.get("type")),
                spellings=[
                    entry["url"]
                    for entry in (spellings if isinstance(spellings, list) else [])
                    if isinstance(entry, dict) and isinstance(entry.get("url"), str)
                ],
            )
        )
    return devices


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
