"""What each device last did, for its page (docs/web.md, "Devices"): every sync request of the
gpodder API and the Nextcloud paths notes what it pulled or uploaded, how many, and what was
refused and why, in one bounded write (DeviceSyncEvent's ring of SYNC_EVENTS_KEPT slots).

The note is the one statement a sync request adds (bench/HISTORY.md, "2026-11-26: device sync
diagnostics"): it finds the device, its next slot and the account's standing itself, and
writes over the device's oldest event; it never fails the sync.
"""

import functools
import hashlib
import logging
import re
import unicodedata
from collections.abc import Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import DatabaseError, connection

from core import clock
from core.db import later, sql
from core.db.hints import unflushed
from gpodder.models import SYNC_EVENTS_KEPT, Device, DeviceSyncEvent

logger = logging.getLogger(__name__)

Kind = DeviceSyncEvent.Kind
Data = DeviceSyncEvent.Data
Protocol = DeviceSyncEvent.Protocol

# The gpodder API's episode actions name no device of the request: a download, or an upload
# whose actions name none, is noted on the device that last synced over the same API with the
# same User-Agent within this time, the app's other requests of the same sync; the one of the
# same session first, so that two phones with the same app are told apart.
SAME_APP_WITHIN = timedelta(hours=1)
_TEXT = DeviceSyncEvent._meta.get_field("reason").max_length or 255


@dataclass(frozen=True)
class SyncNote:
    """What one sync request did on one device."""

    kind: str  # Kind
    data: str  # Data
    count: int = 0  # what the device was sent (a pull), or sent and was taken (an upload)
    refused: int = 0  # what it sent that was refused or left out
    reason: str = ""  # why, in words
    detail: str = ""  # what was sent, in words


def plural(count: int, one: str, many: str | None = None) -> str:
    return f"{count} {one if count == 1 else (many or one + 's')}"


def shown_text(text: str) -> str:
    """`text` as a note keeps it: no control characters nor lone surrogates (a reason may quote
    what the app sent, which the database's text could not hold), and not too long."""
    if not (text.isascii() and text.isprintable()):
        text = "".join(" " if unicodedata.category(ch) in ("Cc", "Cs") else ch for ch in text)
    return text if len(text) <= _TEXT else text[: _TEXT - 1] + "…"


# --- the write --------------------------------------------------------------------------------

_EVENTS = DeviceSyncEvent._meta.db_table
_DEVICES = Device._meta.db_table
_SEQ = sql.Columns(None)
_COLUMNS = ("kind", "data", "count", "refused", "reason", "detail")
_CASTS = ("text", "text", "integer", "integer", "text", "text")
# Which device a note is of: the one its key names, or the one of the same app (None).
_NAMED = "d.device_id = note.device"
_SAME_APP = (
    f"d.id = (SELECT e.device_id FROM {_EVENTS} e JOIN {_DEVICES} x ON x.id = e.device_id"
    " WHERE x.user_id = %s AND e.protocol = %s AND e.agent = %s AND e.at >= %s"
    " ORDER BY e.session = %s DESC, e.at DESC, e.seq DESC LIMIT 1)"
)


@functools.cache
def _statement(notes: int, same_app: bool, vendor: str) -> str:
    """The note's statement: the devices' next slots, over the oldest event of each.

    Only while the device and its account stand, the account active: a device removed or an
    account deleted since the request began is noted nothing. On PostgreSQL the device's row is
    held (FOR KEY SHARE, which neither another request's note nor its last-use update waits for)
    until the statement ends, against a removal, or the account's deletion, committing between
    the read and the foreign key's check; not the account's row, which every device of the
    account would share. And the commit does not wait for the disk (core.db.hints), in the
    statement itself. Two notes of one device at the very same moment may take the same slot:
    the later stays.
    """
    postgresql = vendor == "postgresql"
    row = ", ".join(
        f"CAST(%s AS {cast}) AS {name}" for name, cast in zip(_COLUMNS, _CASTS, strict=True)
    )
    rows = " UNION ALL ".join([f"SELECT CAST(%s AS text) AS device, {row}"] * notes)
    users = get_user_model()._meta.db_table
    columns = ", ".join(f"note.{name}" for name in _COLUMNS)
    noted = (
        f"SELECT d.id, {columns},"
        f" (SELECT COALESCE(MAX(e.seq) + 1, 0) FROM {_EVENTS} e WHERE e.device_id = d.id) AS seq"
        f" FROM ({rows}) note JOIN {_DEVICES} d ON d.user_id = %s"
        f" AND {_SAME_APP if same_app else _NAMED}"
        f" JOIN {users} account ON account.id = d.user_id AND account.is_active"
        + (" FOR KEY SHARE OF d" if postgresql else "")
    )
    unflushed = (
        ", (SELECT set_config('synchronous_commit', 'off', true)) unflushed" if postgresql else ""
    )
    same = ("seq", "at", "protocol", "agent", "session", *_COLUMNS)
    updated = ", ".join(f"{name} = excluded.{name}" for name in same)
    return (
        f"INSERT INTO {_EVENTS} (device_id, slot, {', '.join(same)})"
        f" SELECT noted.id, noted.seq %% {SYNC_EVENTS_KEPT}, noted.seq, %s, %s, %s, %s,"
        f" {', '.join(f'noted.{name}' for name in _COLUMNS)}"
        f" FROM ({noted}) noted{unflushed} WHERE true"
        f" ON CONFLICT (device_id, slot) DO UPDATE SET {updated} RETURNING seq"
    )


def sync_note_record(
    *,
    user_id: int,
    protocol: str,
    agent: str,
    session_key: str | None,
    notes: Mapping[str | None, SyncNote],
) -> None:
    """Note what a sync request did on each device of `notes` (device id: its note; None: the
    device of the same app, SAME_APP_WITHIN), in one statement. Nothing for a device that does
    not exist; a database error is logged, never raised, outside a transaction: the sync it
    describes is done. Written after the answer (core.db.later) unless SYNC_NOTES_AFTER_ANSWER
    is off; at once inside a transaction. `session_key`: the request's gpodder API session."""
    if not notes or not settings.DEVICE_SYNC_EVENTS:
        return
    now = clock.now()
    agent = shown_text(agent)
    session = hashlib.sha256(session_key.encode()).hexdigest()[:16] if session_key else ""
    at = sql.param(DeviceSyncEvent._meta.get_field("at"), now)
    same_app = None in notes
    assert not same_app or len(notes) == 1, "a note of the same app is the request's only one"
    params: list[Any] = [at, protocol, agent, session]
    for device, note in notes.items():
        params += [device, note.kind, note.data, note.count, note.refused]
        params += [shown_text(note.reason), shown_text(note.detail)]
    params.append(user_id)
    if same_app:
        since = sql.param(DeviceSyncEvent._meta.get_field("at"), now - SAME_APP_WITHIN)
        params += [user_id, protocol, agent, since, session]
    statement = functools.partial(_noted, len(notes), same_app, params)
    if settings.SYNC_NOTES_AFTER_ANSWER:
        later.write_later(statement)
    else:
        statement()


def _noted(notes: int, same_app: bool, params: list[Any]) -> None:
    try:
        statement = _statement(notes, same_app, connection.vendor)
        # PostgreSQL's statement turns synchronous_commit off itself (_statement), in the same
        # round trip; SQLite has no such setting for one statement.
        with unflushed() if connection.vendor == "sqlite" else nullcontext():
            sql.fetch(statement, params, _SEQ, prepare=notes == 1)
    except DatabaseError:
        if connection.in_atomic_block:
            raise
        logger.warning("a device's sync event was not noted", exc_info=True)


# --- what each kind of request notes ----------------------------------------------------------


def subscriptions_pulled(*, added: int, removed: int) -> SyncNote:
    """A pull of subscription changes: those subscribed (`added`), unsubscribed or deleted."""
    changes = plural(added + removed, "subscription change")
    return SyncNote(
        Kind.PULL,
        Data.SUBSCRIPTIONS,
        count=added + removed,
        detail=f"{changes} ({added} subscribed, {removed} unsubscribed)",
    )


def list_pulled(count: int) -> SyncNote:
    """The simple API's GET: the whole list."""
    return SyncNote(
        Kind.PULL,
        Data.SUBSCRIPTIONS,
        count=count,
        detail=f"the whole list: {plural(count, 'feed')}",
    )


def _unusable(urls: list[str]) -> str:
    return f"not usable as a feed's address, like {urls[0]}"


def subscriptions_uploaded(
    *, add: list[str], remove: list[str], update_urls: list[list[str]]
) -> SyncNote:
    """An upload of subscription changes; those of its URLs the answer told the app it cannot
    use ("" in update_urls) were left out."""
    unusable = {sent for sent, used in update_urls if not used}
    added = sum(1 for url in add if url not in unusable)
    removed = sum(1 for url in remove if url not in unusable)
    refused = [url for url in (*add, *remove) if url in unusable]
    changes = plural(added + removed, "subscription change")
    return SyncNote(
        Kind.UPLOAD,
        Data.SUBSCRIPTIONS,
        count=added + removed,
        refused=len(refused),
        reason=_unusable(refused) if refused else "",
        detail=f"{changes} ({added} added, {removed} removed)",
    )


def list_uploaded(*, urls: list[str], unusable: list[str]) -> SyncNote:
    """The simple API's PUT: the whole list, less the URLs it cannot use."""
    refused = [url for url in urls if url in set(unusable)]
    taken = len(urls) - len(refused)
    return SyncNote(
        Kind.UPLOAD,
        Data.SUBSCRIPTIONS,
        count=taken,
        refused=len(refused),
        reason=_unusable(refused) if refused else "",
        detail=f"the whole list: {plural(taken, 'feed')}",
    )


def actions_downloaded(count: int) -> SyncNote:
    return SyncNote(
        Kind.PULL, Data.EPISODE_ACTIONS, count=count, detail=plural(count, "episode action")
    )


def actions_uploaded(*, taken: int, left_out: int, unusable: list[str]) -> SyncNote:
    """An upload of episode actions: `left_out` of them named a podcast or episode URL that
    cannot be used (`unusable`)."""
    reason = ""
    if left_out:
        reason = "a podcast or episode URL that cannot be used"
        reason += f", like {unusable[0]}" if unusable else ""
    return SyncNote(
        Kind.UPLOAD,
        Data.EPISODE_ACTIONS,
        count=taken,
        refused=left_out,
        reason=reason,
        detail=plural(taken, "episode action"),
    )


def actions_uploaded_on(
    *, devices: list[str | None], left_out: list[str | None], unusable: list[str]
) -> dict[str | None, SyncNote]:
    """The gpodder API's upload of episode actions, which the request names no device of: each
    device its actions name (`devices`, one per action sent; `left_out`, one per action left
    out) notes its own; when they name none, the device of the same app (None) notes them all."""
    named = {device for device in devices if device is not None}
    if not named:
        return {
            None: actions_uploaded(
                taken=len(devices) - len(left_out), left_out=len(left_out), unusable=unusable
            )
        }
    return {
        device: actions_uploaded(
            taken=devices.count(device) - left_out.count(device),
            left_out=left_out.count(device),
            unusable=unusable,
        )
        for device in sorted(named)
    }


_INVALID = "Input could not be validated: "


def refusal(*, data: str, pull: bool, items: int, message: str) -> SyncNote:
    """A request refused whole (its answer's status and `message`), with the `items` it sent,
    none of which was taken."""
    what = "subscription changes" if data == Data.SUBSCRIPTIONS else "episode actions"
    if pull:
        detail = f"a pull of {what}"
    elif items:
        noun = "URL" if data == Data.SUBSCRIPTIONS else "episode action"
        detail = f"an upload of {plural(items, noun)}"
    else:
        detail = f"an upload of {what}"
    return SyncNote(
        Kind.REFUSAL,
        data,
        refused=items,
        reason=message.removeprefix(_INVALID),
        detail=detail,
    )


# --- the app, from its User-Agent -----------------------------------------------------------

# The first product of a User-Agent, "AntennaPod/3.5.0 ..." or "gPodder/3.11.4 (+http://...)".
_PRODUCT = re.compile(r"\s*([A-Za-z][\w.+-]*(?: [A-Za-z][\w.+-]*)*)/([\w.+~-]+)")


def app_of(agent: str) -> str:
    """The app a User-Agent names, as "AntennaPod 3.5.0"; the agent itself when it names
    none in the usual way; "an unnamed app" when it is empty."""
    found = _PRODUCT.match(agent)
    if found:
        return f"{found[1]} {found[2]}"
    return agent.strip() or "an unnamed app"
