"""POST and GET /api/2/episodes/{user}.json: upload and download episode actions
(docs/gpodder-api.md, "Episode actions")."""

from typing import Any

from django.conf import settings
from django.core import signing
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.basic import BasicThenSessionAuthentication
from api.params import bad_parameter, query_param, since_param
from api.parsers import app_json
from api.protocols import AppView
from api.renderers import json_answer
from episodes import selectors, services
from episodes.actions import actions_parsed
from episodes.answers import actions_answer, texts_of
from gpodder import diagnostics
from gpodder.feedurls import sanitized
from gpodder.noting import Notes, SyncNoting, note_sync
from gpodder.services import device_id_checked, device_id_valid

# The timestamp a download answered, kept by the app's cookie jar (docs/gpodder-api.md,
# "Episode actions: the timestamp of an upload").
READ_UP_TO_COOKIE = "episodes_read_up_to"
_COOKIE_PATH = "/api/2/episodes/"


# The most devices a refused upload is noted on.
REFUSAL_DEVICES = 10


def actions_downloaded(
    request: Request | HttpRequest,
    *,
    since: int,
    session_key: str | None,
    podcast: str | None = None,
    device: str | None = None,
    aggregated: bool = False,
) -> HttpResponseBase:
    """An episode download's answer, noted on the device the same app synced last (a download
    names none): the view's, with its filters read, and the fast path's (fastpath), with none."""
    # Everything since `since` in one answer (docs/gpodder-api.md, "Episode actions:
    # download"): apps read one answer per sync.
    timestamp = selectors.read_point(user_id=request.user.pk).timestamp  # type: ignore[arg-type]
    user = request.user
    if aggregated:
        rows = selectors.actions_since(user=user, since=since, podcast=podcast, device=device)
        texts = texts_of(selectors.latest_of_each_episode(rows))
    else:
        texts = selectors.action_texts_since(user=user, since=since, podcast=podcast, device=device)

    def sent(count: int) -> None:
        noted: Notes = {None: diagnostics.actions_downloaded(count)}
        note_sync(request, diagnostics.Protocol.GPODDER, session_key, noted)

    response = actions_answer(texts, timestamp, sent=sent)
    if podcast is None and device is None:
        # Only where the app's whole stream stands: a filtered download is a look aside.
        _remember_read_up_to(response, request.user, timestamp)
    return response


def actions_uploaded(
    request: Request | HttpRequest, body: Any, *, session_key: str | None
) -> dict[str, Any]:
    """An episode upload's answer, `body` its body read, noted on the devices its actions
    name: the view's and the fast path's."""
    actions = actions_parsed(body, limit=settings.MAX_EPISODE_ACTIONS)
    upload = services.actions_upload(
        user=request.user, actions=actions, read_up_to=_read_up_to(request)
    )
    notes = diagnostics.actions_uploaded_on(
        devices=[action.device for action in actions],
        left_out=[action.device for action in upload.left_out],
        unusable=[sent for sent, used in upload.update_urls if not used],
    )
    note_sync(request, diagnostics.Protocol.GPODDER, session_key, notes)
    return {"timestamp": upload.timestamp, "update_urls": upload.update_urls}


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
        return actions_downloaded(
            request,
            since=since,
            session_key=self.session_key(request),
            podcast=podcast,
            device=device,
            aggregated=_flag(request, "aggregated"),
        )

    def post(self, request: Request, username: str) -> Response:
        key = self.session_key(request)
        return Response(actions_uploaded(request, request.data, session_key=key))

    def refused_devices(self, request: Request, body: Any) -> list[str | None]:
        """The devices its actions name, a few at most (a body may name thousands), else the
        device of the same app."""
        named = {
            item["device"]
            for item in (body if isinstance(body, list) else [])
            if isinstance(item, dict) and device_id_valid(item.get("device"))
        }
        return sorted(named)[:REFUSAL_DEVICES] or [None]


# The parameters only the view reads: a download with any of them is the view's.
_FILTERS = ("podcast", "device", "aggregated")


def fast_takes_download(request: HttpRequest) -> bool:
    """Whether the fast path takes a download: one that names no filter."""
    return not any(name in request.GET for name in _FILTERS)


def fast_download(request: HttpRequest, session_key: str | None) -> HttpResponseBase:
    """EpisodeActionsView's GET on the fast path (fastpath), for one it takes."""
    since = since_param(request, required=False)
    return actions_downloaded(request, since=since, session_key=session_key)


def fast_upload(request: HttpRequest, session_key: str | None) -> HttpResponse:
    """EpisodeActionsView's POST on the fast path; a request with no body is the view's."""
    return json_answer(actions_uploaded(request, app_json(request), session_key=session_key))


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


def _read_up_to(request: Request | HttpRequest) -> int | None:
    """The timestamp this app's last download was answered, when its cookie came back."""
    value = request.COOKIES.get(READ_UP_TO_COOKIE)
    if value is None:
        return None
    try:
        return int(_signer(request.user).unsign(value))
    except (signing.BadSignature, ValueError):
        return None
