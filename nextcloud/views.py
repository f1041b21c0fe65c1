"""The Nextcloud gPodder Sync API's four data paths: HTTP Basic on every request, JSON bodies
whatever their label, every answer JSON and `Cache-Control: no-store` (docs/nextcloud.md)."""

from typing import Any

from django.conf import settings
from django.http import HttpResponseBase
from drf_spectacular.utils import extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.negotiation import IgnoreAcceptNegotiation
from api.renderers import JSONRenderer
from core.exceptions import InvalidInput
from episodes import selectors as episodes
from episodes.actions import actions_parsed
from episodes.answers import actions_answer
from gpodder import services as gpodder
from gpodder.models import Device
from gpodder.parsers import AnyJSONParser
from gpodder.serializers import SubscriptionChangesSerializer
from gpodder.views import since_param
from nextcloud import services
from nextcloud.authentication import NextcloudAuthentication


# The OpenAPI document describes /v1/; docs/nextcloud.md describes these paths.
@extend_schema(exclude=True)
class NextcloudView(APIView):
    """Basic only (no session is read or written); 400 for bad input; `no-store` on every
    answer, errors included (AntennaPod keeps an HTTP cache)."""

    authentication_classes = [NextcloudAuthentication]
    permission_classes = [IsAuthenticated]
    parser_classes = [AnyJSONParser]
    renderer_classes = [JSONRenderer]
    content_negotiation_class = IgnoreAcceptNegotiation
    invalid_input_status = 400

    def dispatch(self, request: Any, *args: Any, **kwargs: Any) -> HttpResponseBase:
        response = super().dispatch(request, *args, **kwargs)
        response["Cache-Control"] = "no-store"
        return response

    def device(self, request: Request) -> Device:
        return services.request_device(
            user=request.user, app_password_id=getattr(request, "app_password_id", None)
        )


def _body(request: Request, expected: str) -> Any:
    """The request's JSON body; never an absent one read as empty (a body lost on the way
    would otherwise be taken for "nothing")."""
    if request.stream is None:
        raise InvalidInput(f"the body is empty: send {expected}", errors={"body": [expected]})
    return request.data


class SubscriptionsView(NextcloudView):
    def get(self, request: Request) -> Response:
        sent = since_param(request, required=False)
        device = self.device(request)
        # AntennaPod keeps its own clock as its next `since`, not what was answered: a change
        # another device made after its last pull (or a clock running fast) would lie before
        # it. Never read from later than where this device's last pull read.
        since = sent
        if sent and device.pulled_up_to is not None:
            since = min(sent, device.pulled_up_to)
        changes = gpodder.subscription_pull(user=request.user, device=device, since=since)
        # At 0 an app deletes every local feed named in `remove`: the first sync of a phone
        # would lose the feeds added on it that were once removed elsewhere.
        remove = [] if sent == 0 else changes.remove
        return Response({"add": changes.add, "remove": remove, "timestamp": changes.timestamp})


class SubscriptionChangeView(NextcloudView):
    def post(self, request: Request) -> Response:
        serializer = SubscriptionChangesSerializer(
            data=_body(request, 'a JSON object {"add": [...], "remove": [...]}')
        )
        serializer.is_valid(raise_exception=True)
        gpodder.subscription_changes_check(**serializer.validated_data)
        upload = gpodder.subscription_upload(
            user=request.user, device=self.device(request), **serializer.validated_data
        )
        return Response({"timestamp": upload.timestamp, "update_urls": upload.update_urls})


class EpisodeActionCreateView(NextcloudView):
    def post(self, request: Request) -> Response:
        body = _body(request, "a JSON list of episode actions")
        actions = actions_parsed(body, limit=settings.MAX_EPISODE_ACTIONS)
        device_id = services.request_device_id(
            app_password_id=getattr(request, "app_password_id", None)
        )
        timestamp = services.actions_upload(user=request.user, device_id=device_id, actions=actions)
        return Response({"timestamp": timestamp})


class EpisodeActionsView(NextcloudView):
    def get(self, request: Request) -> HttpResponseBase:
        since = since_param(request, required=False)
        download = services.actions_download(
            user=request.user, device=self.device(request), since=since
        )
        rows = episodes.actions_since(user=request.user, since=download.since)
        return actions_answer(rows, download.timestamp, with_device=False)
