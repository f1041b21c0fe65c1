"""Writing an import's history (imports.history.Source) into a person's account, through the
services an app's uploads go through, so that every rule of theirs holds: the feed URLs
sanitised and matched as an upload's, each device's own spelling kept, each action stored once
however often it comes, and stamped with the second it was received, so that every device of
the person gets the history at its next sync (docs/imports.md).

Idempotent: a second run finds everything there and adds nothing. Each batch is written whole or
not at all, so a run cut off midway leaves whole records, and running it again completes it.
"""

import contextlib
import json
import logging
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from itertools import islice
from typing import IO, Any

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import Q

from core import clock
from core.exceptions import DomainError, InvalidInput, NotAuthorized
from core.text import readable
from episodes import services as episodes
from episodes.actions import ActionError, SentAction, action_parsed
from gpodder import selectors as gpodder_selectors
from gpodder import services as gpodder
from gpodder.feedurls import sanitized
from imports.files import file_source
from imports.history import Source, SourceDevice
from imports.models import Import, ImportChunk
from imports.remote import Account, ImportFailed, server_address, server_source
from imports.sealed import opened, seal
from subscriptions import feeds
from subscriptions.selectors import subscription_feeds_reached
from subscriptions.services import AddEntry, subscription_add_many

logger = logging.getLogger(__name__)

# Actions written a statement at a time.
BATCH = 1000
# An import file is kept a megabyte a row until it is read.
CHUNK_BYTES = 1024 * 1024
# The refusals a summary lists; it counts them all.
REFUSALS_KEPT = 100
# The longest text of an import's that a page shows: an item named in a refusal, a reason, the
# import's error (which may quote what the other server sent, as long as it made it).
MAX_TEXT = 500


@dataclass(frozen=True)
class Refusal:
    what: str  # the item refused, in words
    reason: str


@dataclass
class Summary:
    """What an import did, for its page and the command's last lines."""

    # The devices the import wrote to: the source's own, and those its actions name.
    device_ids: set[str] = field(default_factory=set)
    podcasts_added: int = 0
    podcasts_merged: int = 0  # reached a subscription held under another spelling or URL
    podcasts_already: int = 0
    actions_read: int = 0
    actions_imported: int = 0
    actions_already: int = 0
    refusals: list[Refusal] = field(default_factory=list)
    refused: int = 0

    @property
    def devices(self) -> int:
        return len(self.device_ids)

    def refuse(self, what: str, reason: str) -> None:
        """Count an item refused, and keep it named, in words the database stores and a page
        shows: both may quote the source (an episode URL, a server's reason) as it sent them."""
        self.refused += 1
        if len(self.refusals) < REFUSALS_KEPT:
            self.refusals.append(Refusal(readable(what, MAX_TEXT), readable(reason, MAX_TEXT)))


# Called after each step with the summary so far.
Progress = Callable[[Summary], None]


def history_import(
    *, user: Any, source: Source, progress: Progress | None = None, summary: Summary | None = None
) -> Summary:
    """Write `source` into `user`'s account: its feeds, its devices with their feeds and
    spellings, then its actions, BATCH at a time. `summary` is filled as it goes, so that a run
    that raises midway still tells what it wrote."""
    summary = summary if summary is not None else Summary()
    for what, reason in source.refused:
        summary.refuse(what, reason)
    told = progress or (lambda summary: None)
    podcasts = _Podcasts(user, summary)
    podcasts.subscribe(source.feeds, guids=source.guids)
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
    summary.device_ids.add(made.device_id)
    return made, ""


class _Podcasts:
    """Feeds subscribed, each counted once for the whole import: added, merged or already
    there, by what the account held before. A device's feeds go in as its own upload would
    (the gpodder API's rules, its spelling kept); feeds of no device as /v1/'s add."""

    def __init__(self, user: Any, summary: Summary) -> None:
        self.user, self.summary = user, summary
        self.seen: set[str] = set()

    def subscribe(
        self, urls: list[str], device: Any = None, guids: dict[str, str] | None = None
    ) -> None:
        """Subscribe to `urls`: as the device's upload, or (no device) as /v1/'s add, each with
        its guid in `guids`, when it had one (an export's)."""
        used = self._usable(urls, device)
        size = settings.MAX_OPML_ENTRIES if device is not None else settings.MAX_ADD_ENTRIES
        sent = list(used)
        for start in range(0, len(sent), size):
            batch = sent[start : start + size]
            new = self._counted({url: used[url] for url in batch})
            if device is not None:
                gpodder.subscription_upload(user=self.user, device=device, add=batch, remove=[])
            elif new:
                entries = [AddEntry(feed_url=url, guid=(guids or {}).get(url)) for url in new]
                result = subscription_add_many(user=self.user, entries=entries)
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
    left_out = set(map(id, upload.left_out))
    summary.device_ids.update(
        a.device for a in parsed if a.device is not None and id(a) not in left_out
    )
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


# --- an import's run, from the page or a worker ----------------------------------------------


UNDER_WAY = "an import of yours is under way: wait for it to end"


def import_check_allowed(*, user: Any) -> None:
    """Refuse to start an import while one of the user's runs, or past IMPORT_MAX_PER_DAY. One
    whose worker ended without a word is ended first: it runs no more."""
    now = clock.now()
    mine = Import.objects.filter(user=user)
    under_way = mine.filter(state__in=Import.UNDER_WAY)
    before = Import.stalled_before(now)
    under_way.filter(Q(updated__lt=before) | Q(updated__isnull=True, created__lt=before)).update(
        state=Import.State.FAILED, error=Import.STALLED, finished=now
    )
    # The file of one that ended without its run (stopped, or its message lost) goes too.
    ImportChunk.objects.filter(upload__user=user, upload__state=Import.State.FAILED).delete()
    if under_way.exists():
        raise InvalidInput(UNDER_WAY)
    limit = settings.IMPORT_MAX_PER_DAY
    if mine.filter(created__gte=now - timedelta(days=1)).count() >= limit:
        raise InvalidInput(
            f"you started {limit} imports in the last 24 hours, the most there may be "
            "(IMPORT_MAX_PER_DAY): try again tomorrow"
        )


def server_import_start(*, user: Any, account: Account) -> Import:
    """Queue an import of `account`'s history on its server; its password goes to the run alone
    (imports.sealed), never into the database."""
    try:
        origin = server_address(account.server)
    except ImportFailed as exc:
        raise InvalidInput(exc.message, errors={"server": [exc.message]}) from None
    import_check_allowed(user=user)
    upload = _created(user=user, source=Import.Source.SERVER, origin=origin)
    secret = seal(
        json.dumps([account.username, account.password, account.protocol, account.own_network])
    )
    transaction.on_commit(lambda: _dispatch(upload.pk, secret))
    return upload


def file_import_start(*, user: Any, name: str, file: IO[bytes]) -> Import:
    """Queue an import of a file, kept in the database (a megabyte a row) until it is read."""
    import_check_allowed(user=user)
    with transaction.atomic():
        upload = _created(user=user, source=Import.Source.FILE, origin=readable(name, 300))
        seq = 0
        while chunk := file.read(CHUNK_BYTES):
            ImportChunk.objects.create(upload=upload, seq=seq, data=chunk)
            seq += 1
    transaction.on_commit(lambda: _dispatch(upload.pk, None))
    return upload


def _created(*, user: Any, source: str, origin: str) -> Import:
    """The new import, unless another of the user's got under way meanwhile (the database
    keeps one at a time)."""
    try:
        with transaction.atomic():
            return Import.objects.create(
                user=user, source=source, origin=origin, created=clock.now()
            )
    except IntegrityError:
        raise InvalidInput(UNDER_WAY) from None


def _dispatch(import_id: int, secret: str | None) -> None:
    """To a worker through the broker; on the home server (no broker), to a thread of this
    process, so that the page can show the import's progress while it runs."""
    if settings.IMPORT_IN_THREAD:
        thread = threading.Thread(
            target=_in_thread, args=(import_id, secret), name="import", daemon=True
        )
        thread.start()
        return
    from imports.tasks import run_import

    try:
        run_import.delay(import_id, secret)
    except Exception:  # whatever the broker's client raised: the import is told, not a 500
        logger.warning("Could not send import %s to a worker", import_id, exc_info=True)
        _ended(import_id, "the task queue could not be reached: start the import again shortly")


def _in_thread(import_id: int, secret: str | None) -> None:
    try:
        import_run(import_id=import_id, secret=secret)
    finally:
        connection.close()  # this thread's own


def import_run(*, import_id: int, secret: str | None) -> None:
    """Run a queued import to its end: DONE with its summary, or FAILED with the reason in
    words. A second delivery of the same import finds it started, and does nothing."""
    now = clock.now()
    started = Import.objects.filter(pk=import_id, state=Import.State.QUEUED).update(
        state=Import.State.RUNNING, started=now, updated=now
    )
    if not started:  # run already (a message delivered twice), or ended as stopped meanwhile
        ended = [Import.State.DONE, Import.State.FAILED]
        ImportChunk.objects.filter(upload_id=import_id, upload__state__in=ended).delete()
        return
    upload = Import.objects.select_related("user").get(pk=import_id)
    progress = _Progress(upload)
    try:
        if upload.source == Import.Source.SERVER:
            credentials = opened(secret or "")
            if credentials is None:
                raise ImportFailed("the import waited too long for a worker: start it again")
            # A run sealed before the confirmation existed has three entries: not confirmed.
            username, password, protocol, *own = json.loads(credentials)
            account = Account(upload.origin, username, password, protocol, bool(own and own[0]))
            with server_source(account, reading=progress.reading) as source:
                _imported(upload, source, progress)
        else:
            with _file_of(upload) as file:
                found = file_source(file, max_actions=settings.IMPORT_MAX_ACTIONS)
                _imported(upload, found, progress)
    except (ImportFailed, InvalidInput) as exc:
        progress.failed(_reason(exc))
    except NotAuthorized:
        progress.failed("the account was deactivated or deleted meanwhile")
    except SoftTimeLimitExceeded:  # the task's backstop (imports.tasks), past IMPORT_TIMEOUT
        progress.failed(
            f"the import took longer than {settings.IMPORT_TASK_SOFT_TIME_LIMIT:g} seconds, the "
            "most a run may take: start it again, it adds what is missing"
        )
    except Exception:
        logger.exception("Import %s stopped on an error", import_id)
        progress.failed("the import stopped on an error of this server; start it again")
    finally:
        ImportChunk.objects.filter(upload_id=import_id).delete()


@contextlib.contextmanager
def _file_of(upload: Import) -> Iterator[IO[bytes]]:
    """The import's file, from its chunks, in a temporary file of this host."""
    with tempfile.TemporaryFile(prefix="import-") as file:
        for data in (
            ImportChunk.objects.filter(upload=upload)
            .order_by("seq")
            .values_list("data", flat=True)
            .iterator(chunk_size=1)
        ):
            file.write(data)
        file.seek(0)
        yield file


class _Progress:
    """Tells the import's page how far it is, at most once a second: what of the server is
    being read (`reading`), then what was written (a call with the summary so far); and the
    summary at the end (`write`), or, when it fails, what it wrote until then (`failed`)."""

    def __init__(self, upload: Import) -> None:
        self.upload = upload
        self.last = 0.0
        # The run's own: what a run that raises midway wrote is still told.
        self.summary = Summary()

    def _due(self) -> bool:
        if time.monotonic() - self.last < 1.0:
            return False
        self.last = time.monotonic()
        return True

    def reading(self, text: str) -> None:
        if self._due():
            Import.objects.filter(pk=self.upload.pk).update(
                described=readable(f"{self.upload.origin}: {text}", 300), updated=clock.now()
            )

    def __call__(self, summary: Summary) -> None:
        if self._due():
            self.write(summary)

    def write(self, summary: Summary, state: str | None = None, error: str = "") -> None:
        now = clock.now()
        fields = {
            "actions_read": summary.actions_read,
            "devices": summary.devices,
            "podcasts_added": summary.podcasts_added,
            "podcasts_merged": summary.podcasts_merged,
            "podcasts_already": summary.podcasts_already,
            "actions_imported": summary.actions_imported,
            "actions_already": summary.actions_already,
            "refused": summary.refused,
            "refusals": [{"what": r.what, "reason": r.reason} for r in summary.refusals],
            "updated": now,
        }
        if state is not None:
            # Paged answers repeat a few actions, counted ahead: at the end, the bar is full.
            fields.update(state=state, finished=now, action_count=summary.actions_read)
        if error:
            fields.update(error=readable(error, MAX_TEXT))
        Import.objects.filter(pk=self.upload.pk).update(**fields)

    def failed(self, reason: str) -> None:
        """End the import as failed, with the reason and what it wrote until then; should even
        that not be stored, as failed with the reason alone: never left under way, which would
        hold the person's next import back until it counts as stalled."""
        try:
            self.write(self.summary, state=Import.State.FAILED, error=reason)
        except DatabaseError:
            logger.exception("Import %s: its summary could not be stored", self.upload.pk)
            _ended(self.upload.pk, reason)


def _imported(upload: Import, source: Source, progress: _Progress) -> None:
    upload.described = readable(source.kind, 300)
    upload.action_count = source.action_count
    upload.save(update_fields=["described", "action_count"])
    history_import(user=upload.user, source=source, progress=progress, summary=progress.summary)
    progress.write(progress.summary, state=Import.State.DONE)


def _ended(import_id: int, reason: str) -> None:
    now = clock.now()
    Import.objects.filter(pk=import_id).update(
        state=Import.State.FAILED, error=readable(reason, MAX_TEXT), finished=now, updated=now
    )
    ImportChunk.objects.filter(upload_id=import_id).delete()
