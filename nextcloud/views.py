"""The Nextcloud gPodder Sync API's four data paths: HTTP Basic on every request, JSON bodies
whatever their label, every answer JSON and `Cache-Control: no-store` (docs/nextcloud.md)."""

from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponseBase
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.basic import BasicOnlyAuthentication
from api.params import since_param
from api.parsers import app_json
from api.protocols import AppView
from api.renderers import json_answer
from core.exceptions import InvalidInput, NotAuthorized
from episodes import selectors as episodes
from episodes.actions import actions_parsed
from episodes.answers import actions_answer
from gpodder import diagnostics
from gpodder import services as gpodder
from gpodder.models import Device
from gpodder.noting import Notes, SyncNoting, note_sync
from gpodder.serializers import SubscriptionChangesSerializer
from nextcloud import services


def no_store(response: HttpResponseBase) -> HttpResponseBase:
    """Every answer of these paths, errors included: AntennaPod keeps an HTTP cache."""
    response["Cache-Control"] = "no-store"
    return response


def _device_id(request: Request | HttpRequest) -> str:
    return services.request_device_id(app_password_id=getattr(request, "app_password_id", None))


def _device(request: Request | HttpRequest) -> Device:
    return services.request_device(
        user=request.user, app_password_id=getattr(request, "app_password_id", None)
    )


def _note(request: Request | HttpRequest, notes: Notes) -> None:
    note_sync(request, diagnostics.Protocol.NEXTCLOUD, None, notes)


class NextcloudView(SyncNoting, AppView):
    """Basic only (no session is read or written); `no-store` on every answer, errors
    included. Each request is noted on its device (gpodder.diagnostics). Each answer is a
    function below, which the fast path calls too (fastpath)."""

    authentication_classes = [BasicOnlyAuthentication]
    protocol = diagnostics.Protocol.NEXTCLOUD

    def dispatch(self, request: Any, *args: Any, **kwargs: Any) -> HttpResponseBase:
        return no_store(super().dispatch(request, *args, **kwargs))

    def session_key(self, request: Request) -> str | None:
        return None  # no session is read or written here

    def refused_devices(self, request: Request, body: Any) -> list[str | None]:
        try:
            return [_device_id(request)]
        except NotAuthorized:  # its app password revoked meanwhile
            return []


def _body(request: Request, expected: str) -> Any:
    """The request's JSON body; never an absent one read as empty (a body lost on the way
    would otherwise be taken for "nothing")."""
    if request.stream is None:
        raise InvalidInput(f"the body is empty: send {expected}", errors={"body": [expected]})
    return request.data


_CHANGES = 'a JSON object {"add": [...], "remove": [...]}'
_ACTIONS = "a JSON list of episode actions"


def subscriptions_pulled(request: Request | HttpRequest) -> dict[str, Any]:
    sent = since_param(request, required=False)
    # AntennaPod keeps its own clock as its next `since`, not what was answered: a change
    # another device made after its last pull (or a clock running fast) would lie before
    # it. Never read from later than where this device's last pull read (`capped`).
    changes = gpodder.subscription_pull(
        user=request.user, device_id=_device_id(request), since=sent, capped=True
    )
    # At 0 an app deletes every local feed named in `remove`: the first sync of a phone
    # would lose the feeds added on it that were once removed elsewhere.
    remove = [] if sent == 0 else changes.remove
    pulled = diagnostics.subscriptions_pulled(added=len(changes.add), removed=len(remove))
    _note(request, {changes.device.device_id: pulled})
    return {"add": changes.add, "remove": remove, "timestamp": changes.timestamp}


def subscriptions_changed(request: Request | HttpRequest, body: Any) -> dict[str, Any]:
    serializer = SubscriptionChangesSerializer(data=body)
    serializer.is_valid(raise_exception=True)
    gpodder.subscription_changes_check(**serializer.validated_data)
    device = _device(request)
    upload = gpodder.subscription_upload(
        user=request.user, device=device, **serializer.validated_data
    )
    uploaded = diagnostics.subscriptions_uploaded(
        **serializer.validated_data, update_urls=upload.update_urls
    )
    _note(request, {device.device_id: uploaded})
    return {"timestamp": upload.timestamp, "update_urls": upload.update_urls}


def actions_created(request: Request | HttpRequest, body: Any) -> dict[str, Any]:
    actions = actions_parsed(body, limit=settings.MAX_EPISODE_ACTIONS)
    device_id = _device_id(request)
    upload = services.actions_upload(user=request.user, device_id=device_id, actions=actions)
    uploaded = diagnostics.actions_uploaded(
        taken=len(actions) - len(upload.left_out),
        left_out=len(upload.left_out),
        unusable=[sent for sent, used in upload.update_urls if not used],
    )
    _note(request, {device_id: uploaded})
    return {"timestamp": upload.timestamp}


def actions_downloaded(request: Request | HttpRequest) -> HttpResponseBase:
    since = since_param(request, required=False)
    download = services.actions_download(
        user=request.user, device_id=_device_id(request), since=since
    )
    texts = episodes.action_texts_since(user=request.user, since=download.since, with_device=False)

    def sent(count: int) -> None:
        _note(request, {download.device.device_id: diagnostics.actions_downloaded(count)})

    return actions_answer(texts, download.timestamp, sent=sent)


class SubscriptionsView(NextcloudView):
    def get(self, request: Request) -> Response:
        return Response(subscriptions_pulled(request))


class SubscriptionChangeView(NextcloudView):
    def post(self, request: Request) -> Response:
        return Response(subscriptions_changed(request, _body(request, _CHANGES)))


class EpisodeActionCreateView(NextcloudView):
    data = diagnostics.Data.EPISODE_ACTIONS

    def post(self, request: Request) -> Response:
        return Response(actions_created(request, _body(request, _ACTIONS)))


class EpisodeActionsView(NextcloudView):
    data = diagnostics.Data.EPISODE_ACTIONS

    def get(self, request: Request) -> HttpResponseBase:
        return actions_downloaded(request)


# On the fast path (fastpath): the same answers; a request with no body is the view's.
def fast_pull(request: HttpRequest, session_key: None) -> HttpResponseBase:
    return no_store(json_answer(subscriptions_pulled(request)))


def fast_change(request: HttpRequest, session_key: None) -> HttpResponseBase:
    return no_store(json_answer(subscriptions_changed(request, app_json(request))))


def fast_create(request: HttpRequest, session_key: None) -> HttpResponseBase:
    return no_store(json_answer(actions_created(request, app_json(request))))


def fast_download(request: HttpRequest, session_key: None) -> HttpResponseBase:
    return no_store(actions_downloaded(request))
