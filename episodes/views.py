"""POST and GET /api/2/episodes/{user}.json: upload and download episode actions
(docs/gpodder-api.md, "Episode actions")."""

from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings
from django.core import signing
from django.http import HttpResponseBase
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.basic import BasicThenSessionAuthentication
from api.params import bad_parameter, query_param, since_param
from api.protocols import AppView
from episodes import selectors, services
from episodes.actions import actions_parsed
from episodes.answers import actions_answer
from gpodder import diagnostics
from gpodder.feedurls import sanitized
from gpodder.noting import SyncNoting
from gpodder.services import device_id_checked, device_id_valid

# The timestamp a download answered, kept by the app's cookie jar (docs/gpodder-api.md,
# "Episode actions: the timestamp of an upload").
READ_UP_TO_COOKIE = "episodes_read_up_to"
_COOKIE_PATH = "/api/2/episodes/"


# The most devices a refused upload is noted on.
REFUSAL_DEVICES = 10


class EpisodeActionsView(SyncNoting, AppView):
    """The gpodder.net API's: Basic, or the session cookie a Basic authentication set."""

    authentication_classes = [BasicThenSessionAuthentication]
    data = diagnostics.Data.EPISODE_ACTIONS

    def get(self, request: Request, username: str) -> HttpResponseBase:
        since = since_param(request, required=False)
        podcast = query_param(request, "podcast")
        if podcast is not None and (podcast := sanitized(podcast)) is None:
            raise bad_parameter("podcast", "must be a feed URL")
        device = query_param(request, "device")
        if device is not None:
            device_id_checked(device)
        aggregated = _flag(request, "aggregated")
        # Everything since `since` in one answer (docs/gpodder-api.md, "Episode actions:
        # download"): apps read one answer per sync.
        timestamp = selectors.read_point(user_id=request.user.pk).timestamp  # type: ignore[arg-type]
        rows: Iterable[selectors.ActionShown] = selectors.actions_since(
            user=request.user, since=since, podcast=podcast, device=device
        )
        if aggregated:
            rows = selectors.latest_of_each_episode(rows)
        response = actions_answer(rows, timestamp, sent=self._downloaded(request))
        if podcast is None and device is None:
            # Only where the app's whole stream stands: a filtered download is a look aside.
            _remember_read_up_to(response, request.user, timestamp)
        return response

    def post(self, request: Request, username: str) -> Response:
        actions = actions_parsed(request.data, limit=settings.MAX_EPISODE_ACTIONS)
        upload = services.actions_upload(
            user=request.user, actions=actions, read_up_to=_read_up_to(request)
        )
        notes = diagnostics.actions_uploaded_on(
            devices=[action.device for action in actions],
            left_out=[action.device for action in upload.left_out],
            unusable=[sent for sent, used in upload.update_urls if not used],
        )
        self.note(request, notes)
        return Response({"timestamp": upload.timestamp, "update_urls": upload.update_urls})

    def _downloaded(self, request: Request) -> Callable[[int], None]:
        """A download names no device: it is noted on the one the same app synced last."""
        return lambda count: self.note(request, {None: diagnostics.actions_downloaded(count)})

    def refused_devices(self, request: Request, body: Any) -> list[str | None]:
        """The devices its actions name, a few at most (a body may name thousands), else the
        device of the same app."""
        named = {
            item["device"]
            for item in (body if isinstance(body, list) else [])
            if isinstance(item, dict) and device_id_valid(item.get("device"))
        }
        return sorted(named)[:REFUSAL_DEVICES] or [None]


def _flag(request: Request, name: str) -> bool:
    value = query_param(request, name)
    if value is None or value.lower() in ("false", "0"):
        return False
    if value.lower() in ("true", "1"):
        return True
    raise bad_parameter(name, "must be true or false")


def _signer(user: Any) -> signing.Signer:
    return signing.Signer(salt=f"episodes.read_up_to.{user.pk}")


def _remember_read_up_to(response: HttpResponseBase, user: Any, timestamp: int) -> None:
    response.set_cookie(
        READ_UP_TO_COOKIE,
        _signer(user).sign(str(timestamp)),
        path=_COOKIE_PATH,
        secure=settings.SESSION_COOKIE_SECURE,
        httponly=True,
        samesite="Lax",
    )


def _read_up_to(request: Request) -> int | None:
    """The timestamp this app's last download was answered, when its cookie came back."""
    value = request.COOKIES.get(READ_UP_TO_COOKIE)
    if value is None:
        return None
    try:
        return int(_signer(request.user).unsign(value))
    except (signing.BadSignature, ValueError):
        return None
