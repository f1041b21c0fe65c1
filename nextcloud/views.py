"""The Nextcloud gPodder Sync API's four data paths: HTTP Basic on every request, JSON bodies
whatever their label, every answer JSON and `Cache-Control: no-store` (docs/nextcloud.md)."""

from typing import Any

from django.conf import settings
from django.http import HttpResponseBase
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.basic import BasicOnlyAuthentication
from api.params import since_param
from api.protocols import AppView
from core.exceptions import InvalidInput, NotAuthorized
from episodes import selectors as episodes
from episodes.actions import actions_parsed
from episodes.answers import actions_answer
from gpodder import diagnostics
from gpodder import services as gpodder
from gpodder.models import Device
from gpodder.noting import SyncNoting
from gpodder.serializers import SubscriptionChangesSerializer
from nextcloud import services


class NextcloudView(SyncNoting, AppView):
    """Basic only (no session is read or written); `no-store` on every answer, errors
    included (AntennaPod keeps an HTTP cache). Each request is noted on its device
    (gpodder.diagnostics)."""

    authentication_classes = [BasicOnlyAuthentication]
    protocol = diagnostics.Protocol.NEXTCLOUD

    def dispatch(self, request: Any, *args: Any, **kwargs: Any) -> HttpResponseBase:
        response = super().dispatch(request, *args, **kwargs)
        response["Cache-Control"] = "no-store"
        return response

    def session_key(self, request: Request) -> str | None:
        return None  # no session is read or written here

    def device(self, request: Request) -> Device:
        return services.request_device(
            user=request.user, app_password_id=getattr(request, "app_password_id", None)
        )

    def device_id(self, request: Request) -> str:
        return services.request_device_id(app_password_id=getattr(request, "app_password_id", None))

    def refused_devices(self, request: Request, body: Any) -> list[str | None]:
        try:
            return [self.device_id(request)]
        except NotAuthorized:  # its app password revoked meanwhile
            return []


def _body(request: Request, expected: str) -> Any:
    """The request's JSON body; never an absent one read as empty (a body lost on the way
    would otherwise be taken for "nothing")."""
    if request.stream is None:
        raise InvalidInput(f"the body is empty: send {expected}", errors={"body": [expected]})
    return request.data


class SubscriptionsView(NextcloudView):
    def get(self, request: Request) -> Response:
        sent = since_param(request, required=False)
        # AntennaPod keeps its own clock as its next `since`, not what was answered: a change
        # another device made after its last pull (or a clock running fast) would lie before
        # it. Never read from later than where this device's last pull read (`capped`).
        changes = gpodder.subscription_pull(
            user=request.user, device_id=self.device_id(request), since=sent, capped=True
        )
        # At 0 an app deletes every local feed named in `remove`: the first sync of a phone
        # would lose the feeds added on it that were once removed elsewhere.
        remove = [] if sent == 0 else changes.remove
        pulled = diagnostics.subscriptions_pulled(added=len(changes.add), removed=len(remove))
        self.note(request, {changes.device.device_id: pulled})
        return Response({"add": changes.add, "remove": remove, "timestamp": changes.timestamp})


class SubscriptionChangeView(NextcloudView):
    def post(self, request: Request) -> Response:
        serializer = SubscriptionChangesSerializer(
            data=_body(request, 'a JSON object {"add": [...], "remove": [...]}')
        )
        serializer.is_valid(raise_exception=True)
        gpodder.subscription_changes_check(**serializer.validated_data)
        device = self.device(request)
        upload = gpodder.subscription_upload(
            user=request.user, device=device, **serializer.validated_data
        )
        uploaded = diagnostics.subscriptions_uploaded(
            **serializer.validated_data, update_urls=upload.update_urls
        )
        self.note(request, {device.device_id: uploaded})
        return Response({"timestamp": upload.timestamp, "update_urls": upload.update_urls})


class EpisodeActionCreateView(NextcloudView):
    data = diagnostics.Data.EPISODE_ACTIONS

    def post(self, request: Request) -> Response:
        body = _body(request, "a JSON list of episode actions")
        actions = actions_parsed(body, limit=settings.MAX_EPISODE_ACTIONS)
        device_id = self.device_id(request)
        upload = services.actions_upload(user=request.user, device_id=device_id, actions=actions)
        uploaded = diagnostics.actions_uploaded(
            taken=len(actions) - len(upload.left_out),
            left_out=len(upload.left_out),
            unusable=[sent for sent, used in upload.update_urls if not used],
        )
        self.note(request, {device_id: uploaded})
        return Response({"timestamp": upload.timestamp})


class EpisodeActionsView(NextcloudView):
    data = diagnostics.Data.EPISODE_ACTIONS

    def get(self, request: Request) -> HttpResponseBase:
        since = since_param(request, required=False)
        download = services.actions_download(
            user=request.user, device_id=self.device_id(request), since=since
        )
        rows = episodes.actions_since(user=request.user, since=download.since)

        def sent(count: int) -> None:
            noted = diagnostics.actions_downloaded(count)
            self.note(request, {download.device.device_id: noted})

        return actions_answer(rows, download.timestamp, with_device=False, sent=sent)
