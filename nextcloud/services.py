"""What the Nextcloud paths change: the device a request is from, and how far each device's
downloads of episode actions read (docs/nextcloud.md). Subscriptions and episode actions
themselves are the gpodder and episodes apps' own services: one list, one history."""

import dataclasses
import hashlib
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cachetools import LRUCache
from django.db import connection

from accounts.models import AppPassword
from core.db import sql
from core.db.hints import unflushed
from core.exceptions import NotAuthorized
from episodes import services as episodes
from episodes.actions import SentAction
from episodes.selectors import read_point
from gpodder.models import Device
from gpodder.services import device_beside, device_of, device_stands, devices_touch
from nextcloud.models import ActionsRead

# The device of requests made with the account's own password.
ACCOUNT_DEVICE = "nextcloud"
_DEVICE_ID = re.compile(r"[A-Za-z0-9_.\-]{1,64}", re.ASCII)
_NOT_IN_ID = re.compile(r"[^A-Za-z0-9_.\-]+", re.ASCII)
# Kasts sends "" for a guid it lacks; others send the string "null".
_NO_GUID = ("", "null")


def device_id_for(name: str) -> str:
    """The device id of the app password named `name`: the name itself when it is a valid
    device id (and not the account password's device), else its letters, digits, '_', '.' and
    '-' with a digest of the whole name, so that two names never share a device."""
    if _DEVICE_ID.fullmatch(name) and name != ACCOUNT_DEVICE:
        return name
    kept = _NOT_IN_ID.sub("-", name).strip("-")[:48] or "app"
    return f"{kept}-{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"


def device_caption_for(name: str) -> str:
    """The caption a device made for the app password named `name` starts with: the name as the
    person reads it on the account page ("AntennaPod/3.7.0"), where the device's id had to
    change it ("AntennaPod-3.7.0-daef18d8"); none when the id is the name."""
    return "" if device_id_for(name) == name else name


@dataclass(frozen=True)
class AppDevice:
    device_id: str
    caption: str


class _AppDeviceIds:
    """App password id -> its device, remembered by the process: an app password is never
    renamed, and its id never given to another (a revoked one is refused by authentication
    before this is asked)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._known: LRUCache[int, AppDevice] = LRUCache(maxsize=10_000)

    def get(self, app_password_id: int) -> AppDevice:
        with self._lock:
            known = self._known.get(app_password_id)
        if known is not None:
            return known
        name = AppPassword.objects.filter(pk=app_password_id).values_list("name", flat=True).first()
        if name is None:  # revoked since the request was authenticated
            raise NotAuthorized()
        device = AppDevice(device_id_for(name), device_caption_for(name))
        with self._lock:
            self._known[app_password_id] = device
        return device

    def clear(self) -> None:
        with self._lock:
            self._known.clear()


app_device_ids = _AppDeviceIds()


def request_device_id(*, app_password_id: int | None) -> str:
    """The device id of a request: one device per app password, named after it; one
    `nextcloud` for the account's own password."""
    if app_password_id is None:
        return ACCOUNT_DEVICE
    return app_device_ids.get(app_password_id).device_id


def request_device(*, user: Any, app_password_id: int | None) -> Device:
    """The device of a request, made on first use within MAX_DEVICES (InvalidInput past it),
    with its app password's name for a caption."""
    if app_password_id is None:
        return devices_touch(user=user, device_ids=[ACCOUNT_DEVICE])[ACCOUNT_DEVICE]
    app = app_device_ids.get(app_password_id)
    captions = {app.device_id: app.caption} if app.caption else None
    return devices_touch(user=user, device_ids=[app.device_id], captions=captions)[app.device_id]


_READ = ActionsRead._meta.db_table
_DEVICES = Device._meta.db_table
_UP_TO = sql.Columns(ActionsRead._meta.get_field("up_to"))


def _read_up_to(*, user: Any, device_id: str) -> int | None:
    """Where the device's last download read: a prepared lookup by the device's key, on every
    sync (core.db.sql)."""
    rows = sql.fetch(
        f"SELECT r.up_to FROM {_DEVICES} d JOIN {_READ} r ON r.device_id = d.id"
        " WHERE d.user_id = %s AND d.device_id = %s",
        [user.pk, device_id],
        _UP_TO,
        prepare=True,
    )
    return rows[0][0] if rows else None


def _remember_read_up_to(device: Device, up_to: int, *, first: bool) -> None:
    """Only while the device stands: nothing for one deleted, or whose account was deleted or
    deactivated, since the download began (gpodder.services.device_stands). The device's `first`
    waits for the disk (core.db.hints.unflushed)."""
    with unflushed(first=first), connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {_READ} (device_id, up_to) SELECT %s, %s WHERE {device_stands()}"
            " ON CONFLICT (device_id) DO UPDATE SET up_to = excluded.up_to",
            [device.pk, up_to, device.pk],
        )


@dataclass(frozen=True)
class Download:
    since: int  # where the answer starts
    timestamp: int  # what it answers, and where the device's next download starts at the latest
    device: Device


def actions_download(*, user: Any, device_id: str, since: int) -> Download:
    """Start a download of the user's actions for the device `device_id` (made on first use,
    within MAX_DEVICES): from `since`, or from where the device's last download read when that
    is earlier (AntennaPod keeps its own clock as its next `since`, which would skip what others
    uploaded between its download and its clock); and remember where this one reads up to, when
    that moved: its settled timestamp, which stays the same while no action comes
    (gpodder.sync.settled_timestamp), so a download of an account nobody changed writes nothing.

    The device and where it last read are read in the read point's own statement
    (episodes.selectors.read_point): one round trip for the three.
    """
    beside = device_beside(
        user=user,
        device_id=device_id,
        joined=f"LEFT JOIN {_READ} r ON r.device_id = d.id",
        select=("r.up_to",),
    )
    point = read_point(user_id=user.pk, beside=beside)
    read_up_to = None if point.beside is None else point.beside[-1]
    found = devices_touch(user=user, device_ids=[device_id], found=device_of(point.beside))[
        device_id
    ]
    settled = point.settled(read_up_to)
    if read_up_to != settled:
        _remember_read_up_to(found, settled, first=read_up_to is None)
    start = since if read_up_to is None else min(since, read_up_to)
    return Download(since=start, timestamp=point.timestamp, device=found)


def actions_upload(*, user: Any, device_id: str, actions: Sequence[SentAction]) -> episodes.Upload:
    """Store the actions as /api/2/ does (each once, however often sent), each of the device
    Kasts names in it, else of the request's device `device_id` (made there when new, within
    MAX_DEVICES); `guid` "null" is no guid. Its timestamp, the one to answer, is never later
    than where the device's last download read."""
    filled = [
        dataclasses.replace(
            action,
            device=action.device or device_id,
            guid="" if action.guid in _NO_GUID else action.guid,
        )
        for action in actions
    ]
    read_up_to = _read_up_to(user=user, device_id=device_id)
    return episodes.actions_upload(user=user, actions=filled, read_up_to=read_up_to)
