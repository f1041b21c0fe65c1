"""An import file: which kind it is, and its history (imports.history.Source).

Three kinds, told apart by their content, not their name:
- an OPML file (its first character `<`): subscriptions;
- a gpodder.net episode-actions answer (`{"actions": [...], "timestamp": ...}`, what
  `/api/2/episodes/{user}.json?since=0` returns), or a bare JSON list of actions;
- this service's own export ("Your data": `{"exported": ..., "subscriptions": [...],
  "devices": [...], "episode_actions": [...]}`).

A JSON file is read through once before anything is written, as a stream: a file that is not
JSON, or not of one of these shapes, or holds more actions than the import takes, is refused
whole, and nothing is written; so is one holding an item past its bound (imports.reading).
Its items are then built one at a time, of the keys an import uses alone.
"""

import io
from collections.abc import Callable, Iterator
from typing import IO, Any

from django.conf import settings

from core.exceptions import InvalidInput
from imports import reading
from imports.history import Source, SourceDevice
from subscriptions import opml

# Where each JSON kind keeps its actions (ijson's prefixes).
_ACTIONS = {"list": "item", "gpodder": "actions.item", "export": "episode_actions.item"}
_EXPORT_KEYS = {"exported", "subscriptions", "devices", "episode_actions"}
# The export's subscriptions and devices are held while it is imported (its actions are
# streamed).
MAX_EXPORT_ITEMS = 100_000
# What each place of a file holds, bounded as it is read.
_ITEMS = dict.fromkeys(_ACTIONS.values(), reading.ACTION) | {
    "subscriptions.item": reading.EXPORT_SUBSCRIPTION,
    "devices.item": reading.EXPORT_DEVICE,
}


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
        for _place, item in reading.Items(file, {_ACTIONS[kind]: reading.ACTION}):
            yield item

    if kind != "export":
        described = "a gpodder.net episode-actions file" if kind == "gpodder" else "a JSON list"
        return Source(kind=described, actions=actions, action_count=count, timestamp=timestamp)
    return _export(file, actions, count)


def _first_character(file: IO[bytes]) -> bytes:
    file.seek(0)
    head = file.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")  # a byte-order mark, whitespace
    file.seek(0)
    return head[:1]


def _scanned(file: IO[bytes]) -> tuple[str | None, dict[str, int], int | None]:
    """Read the whole file as JSON events, building nothing: its shape (from its top-level
    keys), how many items each place that may hold actions holds, and its top-level
    `timestamp`. InvalidInput when it cannot be read, or holds an item past its bound
    (imports.reading.events)."""
    counts = dict.fromkeys(_ACTIONS.values(), 0)
    keys: set[str] = set()
    timestamp = None
    file.seek(0)
    for event, value, place in reading.events(file, _ITEMS):
        if event == "map_key":
            if place == "":
                keys.add(value)
        elif event in ("end_map", "end_array"):
            continue
        elif place in counts:  # every item counts, whatever it is
            counts[place] += 1
        elif place == "timestamp" and event == "number" and isinstance(value, int):
            timestamp = value
    if keys & (_EXPORT_KEYS - {"exported"}) and "actions" not in keys:
        return "export", counts, timestamp
    if "actions" in keys:
        return "gpodder", counts, timestamp
    return None, counts, timestamp


def _within_entries(count: int, what: str) -> None:
    limit = settings.MAX_OPML_ENTRIES
    if count > limit:
        raise InvalidInput(
            f"{what} holds {count:,} subscriptions; an import takes at most {limit:,} "
            "(MAX_OPML_ENTRIES)"
        )


def _export(file: IO[bytes], actions: Callable[[], Iterator[Any]], count: int) -> Source:
    """An export's history: its current subscriptions (subscribed, not deleted), each with its
    guid (the others are history the export keeps, which an import does not bring back as
    subscriptions), and its devices with their spellings, read in one pass."""
    file.seek(0)
    wanted = {place: _ITEMS[place] for place in ("subscriptions.item", "devices.item")}
    current: dict[str, str | None] = {}
    devices: list[SourceDevice] = []
    held = dict.fromkeys(wanted, 0)
    for place, item in reading.Items(file, wanted):
        held[place] += 1
        if held[place] > MAX_EXPORT_ITEMS:
            raise InvalidInput(f"more than {MAX_EXPORT_ITEMS:,} {place.split('.')[0]}")
        if place == "subscriptions.item":
            if (
                isinstance(item, dict)
                and isinstance(item.get("feed_url"), str)
                and item.get("is_subscribed") is True
                and item.get("deleted") is None
            ):
                guid = item.get("guid")
                current[item["feed_url"]] = guid if isinstance(guid, str) else None
        elif isinstance(item, dict) and isinstance(item.get("id"), str):
            devices.append(_export_device(item))
    _within_entries(len(current), "this export")
    return Source(
        kind="an export of this service",
        feeds=list(current),
        guids={url: guid for url, guid in current.items() if guid},
        devices=devices,
        actions=actions,
        action_count=count,
    )


def _export_device(item: dict[str, Any]) -> SourceDevice:
    spellings = item.get("feed_url_spellings")
    return SourceDevice(
        id=item["id"],
        caption=_text(item.get("caption")),
        type=_text(item.get("type")),
        spellings=[
            entry["url"]
            for entry in (spellings if isinstance(spellings, list) else [])
            if isinstance(entry, dict) and isinstance(entry.get("url"), str)
        ],
    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
