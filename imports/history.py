"""What an import reads from its source, whatever the source: feeds, devices and episode
actions, the actions as a stream read afresh each time (a history of a million in flat
memory)."""

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class SourceDevice:
    """A device of the source, as it named and described itself."""

    id: str
    caption: str = ""
    type: str = ""
    # Its subscriptions, each as it spells the feed's URL: subscribed, spelling kept.
    feeds: list[str] = field(default_factory=list)
    # Spellings alone (an export's): kept for the feeds subscribed here, nothing subscribed.
    spellings: list[str] = field(default_factory=list)


@dataclass
class Source:
    """Everything an import reads. `actions()` yields each action as its source sent it (a JSON
    object of the fields an action has, checked when it is written), `action_count` of
    them."""

    kind: str  # what was read, in words: "an OPML file", ...
    feeds: list[str] = field(default_factory=list)  # subscriptions of no device
    guids: dict[str, str] = field(default_factory=dict)  # the guids some of them have had
    devices: list[SourceDevice] = field(default_factory=list)
    actions: Callable[[], Iterator[Any]] = lambda: iter(())
    action_count: int = 0
    # A gpodder API answer's own `timestamp`, where the next page of a paged answer starts.
    timestamp: int | None = None
    # What the reading itself left out, and why (what, reason): past a bound, say.
    refused: list[tuple[str, str]] = field(default_factory=list)
