"""Writing an import's history (imports.history.Source) into a person's account, through the
services an app's uploads go through, so that every rule of theirs holds: the feed URLs
sanitised and matched as an upload's, each device's own spelling kept, each action stored once
however often it comes, and stamped with the second it was received, so that every device of
the person gets the history at its next sync (docs/imports.md).

Idempotent: a second run finds everything there and adds nothing. Each batch is written whole or
not at all, so a run cut off midway leaves whole records, and running it again completes it.
"""

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from django.conf import settings

from core.exceptions import DomainError, InvalidInput
from episodes import services as episodes
from episodes.actions import ActionError, SentAction, action_parsed
from gpodder import selectors as gpodder_selectors
from gpodder import services as gpodder
from gpodder.feedurls import sanitized
from imports.history import Source, SourceDevice
from subscriptions import feeds
from subscriptions.selectors import subscription_feeds_reached
from subscriptions.services import AddEntry, subscription_add_many

# Actions written a statement at a time.
BATCH = 1000
# The refusals a summary lists; it counts them all.
REFUSALS_KEPT = 100


@dataclass(frozen=True)
class Refusal:
    what: str  # the item refused, in words
    reason: str


@dataclass
class Summary:
    """What an import did, for its page and the command's last lines."""

    devices: int = 0
    podcasts_added: int = 0
    podcasts_merged: int = 0  # reached a subscription held under another spelling or URL
    podcasts_already: int = 0
    actions_read: int = 0
    actions_imported: int = 0
    actions_already: int = 0
    refusals: list[Refusal] = field(default_factory=list)
    refused: int = 0

    def refuse(self, what: str, reason: str) -> None:
        self.refused += 1
        if len(self.refusals) < REFUSALS_KEPT:
            self.refusals.append(Refusal(what, reason))


# Called after each step with the summary so far.
Progress = Callable[[Summary], None]


def history_import(*, user: Any, source: Source, progress: Progress | None = None) -> Summary:
    """Write `source` into `user`'s account: its feeds, its devices with their feeds and
    spellings, then its actions, BATCH at a time."""
    summary = Summary()
    told = progress or (lambda summary: None)
    podcasts = _Podcasts(user, summary)
    podcasts.subscribe(source.feeds)
    told(summary)
    refused_devices: dict[str, str] = {}
    for device in source.devices:
        made, reason = _device(user, device, summary)
        if made is None:
            refused_devices[device.id] = reason
            continue
        podcasts.subscribe(device.feeds, device=made)
        podcasts.spell(device.spellings, device=made)
        told(summary)
    for batch in _batches(source.actions(), BATCH):
        _actions(user, batch, summary, refused_devices)
        told(summary)
    return summary


def _reason(exc: DomainError) -> str:
    return exc.message.removeprefix(f"{InvalidInput.default_message}: ")


def _device(user: Any, device: SourceDevice, summary: Summary) -> tuple[Any, str]:
    """The device made (or found) with the source's caption and type; or None and why, when it
    cannot be (its id, its caption, or past MAX_DEVICES), noted as refused."""
    kind = device.type if device.type in gpodder.DEVICE_TYPES else None
    try:
        gpodder.device_id_checked(device.id)
        made = gpodder.device_update(
            user=user, device_id=device.id, caption=device.caption or None, type=kind
        )
    except InvalidInput as exc:
        reason = _reason(exc)
        summary.refuse(f"device {device.id[:64]!r}", reason)
        return None, reason
    summary.devices += 1
    return made, ""


class _Podcasts:
    """Feeds subscribed, each counted once for the whole import: added, merged or already
    there, by what the account held before. A device's feeds go in as its own upload would
    (the gpodder API's rules, its spelling kept); feeds of no device as /v1/'s add."""

    def __init__(self, user: Any, summary: Summary) -> None:
        self.user, self.summary = user, summary
        self.seen: set[str] = set()

    def subscribe(self, urls: list[str], device: Any = None) -> None:
        used = self._usable(urls, device)
        size = settings.MAX_OPML_ENTRIES if device is not None else settings.MAX_ADD_ENTRIES
        sent = list(used)
        for start in range(0, len(sent), size):
            batch = sent[start : start + size]
            new = self._counted({url: used[url] for url in batch})
            if device is not None:
                gpodder.subscription_upload(user=self.user, device=device, add=batch, remove=[])
            elif new:
                result = subscription_add_many(
                    user=self.user, entries=[AddEntry(feed_url=url) for url in new]
                )
                for failure in result.failure:
                    self._refused(failure.feed_url, failure.message)

    def spell(self, urls: list[str], *, device: Any) -> None:
        """Keep the device's spellings of the feeds subscribed here, subscribing nothing."""
        used = self._usable(urls, device)
        digests = {url: feeds.feed_key_digest(found) for url, found in used.items()}
        reached = subscription_feeds_reached(user=self.user, digests=set(digests.values()))
        current = [url for url in used if (f := reached.get(digests[url])) and f.current]
        for start in range(0, len(current), settings.MAX_OPML_ENTRIES):
            batch = current[start : start + settings.MAX_OPML_ENTRIES]
            gpodder.subscription_upload(user=self.user, device=device, add=batch, remove=[])

    def _usable(self, urls: Iterable[str], device: Any) -> dict[str, str]:
        """Each usable URL (once) with the URL it is used as, by the rules of where it goes."""
        usable = {}
        for url in dict.fromkeys(urls):
            if device is not None:
                found = sanitized(url)
                if found is None:
                    self._refused(url, "not usable as a feed's address")
                    continue
            else:
                try:
                    feeds.check_feed_url(url)
                except feeds.InvalidFeedUrl as exc:
                    self._refused(url, str(exc))
                    continue
                found = url
            usable[url] = found
        return usable

    def _refused(self, url: str, reason: str) -> None:
        self.summary.refuse(f"podcast {url[:200]}", reason)

    def _counted(self, used: dict[str, str]) -> list[str]:
        """Count the feeds (sent URL: the URL used) not seen before in this import; return
        those of them not subscribed here yet."""
        digests = {url: feeds.feed_key_digest(found) for url, found in used.items()}
        reached = subscription_feeds_reached(user=self.user, digests=set(digests.values()))
        new = []
        for url, digest in digests.items():
            found = reached.get(digest)
            if found is None or not found.current:
                new.append(url)
            if digest in self.seen:
                continue
            self.seen.add(digest)
            if found is None or not found.current:
                self.summary.podcasts_added += 1
            elif found.feed_url == used[url]:
                self.summary.podcasts_already += 1
            else:
                self.summary.podcasts_merged += 1
        return new


def _batches(items: Iterator[Any], size: int) -> Iterator[list[Any]]:
    while batch := list(islice(items, size)):
        yield batch


def _actions(
    user: Any, batch: list[Any], summary: Summary, refused_devices: dict[str, str]
) -> None:
    parsed: list[SentAction] = []
    for item in batch:
        summary.actions_read += 1
        try:
            action = action_parsed(item)
        except ActionError as exc:
            summary.refuse(_action_named(item), str(exc))
            continue
        if action.device in refused_devices:
            reason = refused_devices[action.device]
            summary.refuse(_action_named(item), f"its device could not be made: {reason}")
            continue
        parsed.append(action)
    if parsed:
        _write(user, parsed, summary, refused_devices)


def _write(
    user: Any, parsed: list[SentAction], summary: Summary, refused_devices: dict[str, str]
) -> None:
    try:
        upload = episodes.actions_upload(user=user, actions=parsed, counted=True)
    except InvalidInput:
        # A device the batch names cannot be made (past MAX_DEVICES, which makes all of a batch's
        # new devices or none): made one at a time, in the order the actions name them, as far
        # as they go; the actions of the others are refused, the rest written.
        named = dict.fromkeys(a.device for a in parsed if a.device is not None)
        held = set(gpodder_selectors.device_ids(user=user))
        missing = [device_id for device_id in named if device_id not in held]
        if not missing:
            raise
        for device_id in missing:
            try:
                gpodder.devices_touch(user=user, device_ids=[device_id])
            except InvalidInput as exc:
                refused_devices[device_id] = _reason(exc)
        kept = []
        for action in parsed:
            if action.device in refused_devices:
                reason = refused_devices[action.device]
                summary.refuse(_action_named(action), f"its device could not be made: {reason}")
            else:
                kept.append(action)
        if kept:
            _write(user, kept, summary, refused_devices)
        return
    for action in upload.left_out:
        summary.refuse(_action_named(action), "its podcast or episode URL cannot be used")
    stored = len(parsed) - len(upload.left_out)
    summary.actions_already += upload.already
    summary.actions_imported += stored - upload.already


def _action_named(action: Any) -> str:
    """An action in words, for a refusal: what it did on which episode."""
    if isinstance(action, SentAction):
        return f"{action.action} of {action.episode[:200]}"
    if isinstance(action, dict):
        kind, episode = action.get("action"), action.get("episode")
        if isinstance(kind, str) and isinstance(episode, str):
            return f"{kind[:20]} of {episode[:200]}"
    return "an episode action"
