"""JSON as an import reads it, a file or another server's answer: ijson's basic events, each
item within a bound as it is read, and the items asked for built one at a time (docs/imports.md,
"Bad files and bad items").

An item (an episode action, a device, a subscription) that passes its bound of JSON parts or
characters stops the reading there, with InvalidInput naming it: an action is a dozen values,
not five million empty objects, and the objects are never made. So does a single value (a
string, a number, blank space) longer than MAX_VALUE_BYTES, which the parser would hold whole
before handing it on, and a file that nests deeper than MAX_DEPTH. Of an item built, only the
keys its Item keeps are: any other key's value is read past, never held, and so is a list or an
object where a value belongs.
"""

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import IO, Any

import ijson

from core.exceptions import InvalidInput
from episodes.actions import PLAY_FIELDS

# No file or answer an import reads nests deeper (an export: its document, a list, an entry, a
# history).
MAX_DEPTH = 16
# The longest single value an import reads: no URL, caption or timestamp comes near it.
MAX_VALUE_BYTES = 1024 * 1024

# The keys kept of an object: each with None for a value, or the keys kept of each object of
# the list it holds.
Keys = Mapping[str, "Keys | None"]

_STARTS = frozenset({"start_map", "start_array"})
_ENDS = frozenset({"end_map", "end_array"})
_VALUES = frozenset({"start_map", "start_array", "string", "number", "boolean", "null"})


@dataclass(frozen=True)
class Item:
    """What an item is read as: an object of `keys`, or a value (`keys` None); and its bound,
    in JSON parts (each key and each value, a list or an object counting once for itself and
    once for each part it holds) and in characters of its keys and strings, the others read
    past included."""

    what: str  # in words, for the reason it is refused: "an episode action"
    keys: Keys | None
    max_parts: int
    max_characters: int


# --- what each item of an import is read as --------------------------------------------------

# An action's fields (episodes.actions.action_parsed): a dozen values, three of them URLs or a
# guid of up to 2,048 characters.
ACTION = Item(
    "an episode action",
    dict.fromkeys(("podcast", "episode", "action", "timestamp", "device", "guid", *PLAY_FIELDS)),
    max_parts=256,
    max_characters=64 * 1024,
)
# An export's subscription, read past its guid and URL histories, which grow with each move.
EXPORT_SUBSCRIPTION = Item(
    "a subscription",
    dict.fromkeys(("feed_url", "guid", "is_subscribed", "deleted")),
    max_parts=64 * 1024,
    max_characters=1024 * 1024,
)
# An export's device: its spelling of each of its feeds (thousands, for some), and its last
# sync events, read past.
EXPORT_DEVICE = Item(
    "a device",
    {"id": None, "caption": None, "type": None, "feed_url_spellings": {"url": None}},
    max_parts=256 * 1024,
    max_characters=4 * 1024 * 1024,
)
# A device of another server's device list: its id, caption, type, and a count.
SERVER_DEVICE = Item(
    "a device", dict.fromkeys(("id", "caption", "type")), max_parts=256, max_characters=64 * 1024
)
# A feed's URL in another server's subscriptions.
SERVER_SUBSCRIPTION = Item("a subscription", None, max_parts=1, max_characters=16 * 1024)


class _Bounded:
    """The file as ijson reads it, a buffer at a time once it has handed on every event of the
    one before: past MAX_VALUE_BYTES read with no event between, one value is that long."""

    def __init__(self, file: IO[bytes]) -> None:
        self.file = file
        self.unbroken = 0  # bytes read since the last event
        self.first = True

    def read(self, size: int = -1) -> bytes:
        if self.unbroken > MAX_VALUE_BYTES:
            raise InvalidInput(
                f"this holds a value (a string, a number or blank space) longer than "
                f"{MAX_VALUE_BYTES:,} bytes, which no history has"
            )
        data = self.file.read(size)
        if self.first and data:
            # A byte-order mark, which some servers and editors write and the parser refuses.
            data = data.removeprefix(b"\xef\xbb\xbf")
            self.first = False
        self.unbroken += len(data)
        return data


def events(
    file: IO[bytes], bounded: Mapping[str, Item] | None = None
) -> Iterator[tuple[str, Any, str]]:
    """Each of ijson's basic events of `file` with the place it is at, as ijson's prefixes name
    them ("actions.item"): a value's own, a key's or an end's its container's. InvalidInput when
    it is not JSON, nests deeper than MAX_DEPTH, holds a value longer than MAX_VALUE_BYTES, or
    an item at a place of `bounded` past its Item's bound.

    Basic events, the places made here once a container: ijson's own prefixes are made for each
    event at its depth."""
    items = bounded or {}
    reader = _Bounded(file)
    # Each open container's place, and whether it is a list.
    places: list[str] = []
    lists: list[bool] = []
    here = ""  # the place of the next value
    # The item being read, the containers open outside it, and its size so far.
    item: Item | None = None
    outside = parts = characters = 0
    numbers = dict.fromkeys(items, 0)  # the items begun at each place
    try:
        for event, value in ijson.basic_parse(reader, use_float=True):
            reader.unbroken = 0
            if item is None and event in _VALUES and here in items:
                item, outside, parts, characters = items[here], len(places), 0, 0
                numbers[here] += 1
                number = numbers[here]
            if item is not None and event not in _ENDS:
                parts += 1
                if type(value) is str:
                    characters += len(value)
                if parts > item.max_parts or characters > item.max_characters:
                    raise InvalidInput(_too_large(item, number))
            if event == "map_key":
                place = places[-1]
                here = f"{place}.{value}" if place else value
            elif event in _ENDS:
                place = places.pop()
                lists.pop()
                if lists and lists[-1]:
                    here = f"{places[-1]}.item" if places[-1] else "item"
            elif event in _STARTS:
                place = here
                places.append(here)
                lists.append(event == "start_array")
                if len(places) > MAX_DEPTH:
                    raise InvalidInput(f"this nests deeper than {MAX_DEPTH} levels")
                if event == "start_array":
                    here = f"{here}.item" if here else "item"
            else:
                place = here
            if item is not None and len(places) == outside:
                item = None  # its end, or a value
            yield event, value, place
    except (ijson.JSONError, ValueError) as exc:
        raise InvalidInput(f"this is not valid JSON ({_short(exc)})") from None


def _too_large(item: Item, number: int) -> str:
    bound = f"{item.max_characters:,} characters"
    if item.keys is not None:
        bound = f"{item.max_parts:,} keys and values, {bound}"
    return f"this holds {item.what} larger than one can be (number {number:,}: at most {bound})"


def _short(exc: Exception) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:200]


class Items:
    """Each item at a place of `wanted` ("actions.item": ACTION), in the order of the file,
    with its place, bounded and built as its Item says. Once read through, `lists` holds the
    places of the lists met outside the items (an answer's `add`, say)."""

    def __init__(self, file: IO[bytes], wanted: Mapping[str, Item]) -> None:
        self.file, self.wanted = file, wanted
        self.lists: set[str] = set()

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        stream = events(self.file, self.wanted)
        for event, value, place in stream:
            item = self.wanted.get(place) if event in _VALUES else None
            if item is not None:
                yield place, _built(stream, event, value, item.keys)
            elif event == "start_array":
                self.lists.add(place)


def _built(
    stream: Iterator[tuple[str, Any, str]], event: str, value: Any, keys: Keys | None
) -> Any:
    """The item whose first event was read, from the events that follow: an object of `keys`
    (None: a value), the others read past.

    One loop over the events, a stack of the containers open: the import's actions are read
    through it, a million of them, and a function or a generator a level took twice the time."""
    if event not in _STARTS:
        return value
    kept = event == "start_map" and keys is not None
    # A list or an object where a value belongs is read past, as an empty one (which no rule
    # takes for a value).
    root: Any = {} if event == "start_map" else []
    # Each container open: what is built of it (None: read past), the keys kept (of a map; of
    # each object, for a list), the key being read.
    stack: list[list[Any]] = [[root if kept else None, keys, None]]
    for event, value, _place in stream:
        if event in _ENDS:
            stack.pop()
            if not stack:
                break
            continue
        top = stack[-1]
        if event == "map_key":
            top[2] = value
            continue
        into, kept_keys, key = top
        opens = event in _STARTS
        if into is None or (type(into) is dict and key not in kept_keys):
            if opens:
                stack.append([None, None, None])
            continue
        if type(into) is dict:
            inner = kept_keys[key]
            if event == "start_array" and inner is not None:
                listed: list[Any] = []
                into[key] = listed
                stack.append([listed, inner, None])
            elif opens:
                into[key] = [] if event == "start_array" else {}
                stack.append([None, None, None])
            else:
                into[key] = value
        elif event == "start_map":  # an object of a list
            entry: dict[str, Any] = {}
            into.append(entry)
            stack.append([entry, kept_keys, None])
        elif opens:
            into.append([])
            stack.append([None, None, None])
        else:
            into.append(value)
    return root
