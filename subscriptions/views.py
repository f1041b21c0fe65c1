"""The /v1/subscriptions endpoints: each action validates, calls one service, serializes.

DELETE /v1/subscriptions/{guid} is the deletions app's (deletions.views.SubscriptionDestroyMixin,
joined to this viewset in config/urls.py).
"""

import functools
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.http import HttpRequest, HttpResponse
from rest_framework import viewsets
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.negotiation import IgnoreAcceptNegotiation
from api.pagination import OpaPagination
from api.params import parse_timestamp, parse_uuid, query_param, reject_unknown
from api.renderers import json_answer
from core import clock
from core.exceptions import InvalidInput
from subscriptions import openapi, opml, selectors, services
from subscriptions.parsers import OPML_IMPORT_PARSERS
from subscriptions.serializers import (
    AddRequestSerializer,
    UpdateRequestSerializer,
    add_result_body,
    subscription_body,
    update_result_body,
)


def subscription_read(request: Request | HttpRequest, guid: str) -> dict[str, Any]:
    """GET one's answer: the view's and the fast path's (fastpath)."""
    sub = selectors.subscription_shown(user=request.user, guid=parse_uuid("guid", guid))
    return subscription_body(sub, sub.shown_guid)


def fast_read(request: HttpRequest, session_key: str | None, guid: str) -> HttpResponse:
    """SubscriptionViewSet's GET one on the fast path."""
    return json_answer(subscription_read(request, guid))


class SubscriptionPagination(OpaPagination):
    items_key = "subscriptions"


def subscription_page(request: Request | HttpRequest) -> dict[str, Any]:
    """GET the list's answer: the view's and the fast path's (fastpath)."""
    paginator = SubscriptionPagination()
    reject_unknown(request, ["since", "page", "per_page"])
    since = query_param(request, "since")
    page = paginator.paginate(
        functools.partial(
            selectors.subscription_list,
            user=request.user,
            since=None if since is None else parse_timestamp("since", since),
        ),
        request,
    )
    return paginator.paginated_body([subscription_body(sub, sub.shown_guid) for sub in page])


def fast_list(request: HttpRequest, session_key: str | None) -> HttpResponse:
    """SubscriptionViewSet's list on the fast path."""
    return json_answer(subscription_page(request))


class SubscriptionViewSet(viewsets.ViewSet):
    lookup_field = "guid"
    lookup_value_regex = "[^/]+"
    pagination_class = SubscriptionPagination

    @openapi.subscription_list
    def list(self, request: Request) -> Response:
        return Response(subscription_page(request))

    @openapi.subscription_add
    def create(self, request: Request) -> Response:
        entries = request.data.get("subscriptions") if isinstance(request.data, dict) else None
        limit = settings.MAX_ADD_ENTRIES
        if isinstance(entries, list) and len(entries) > limit:
            raise InvalidInput(f"too many subscriptions, at most {limit} entries per request")
        serializer = AddRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        result = services.subscription_add_many(
            user=request.user,
            entries=[
                services.AddEntry(**entry) for entry in serializer.validated_data["subscriptions"]
            ],
        )
        return Response(add_result_body(result))

    @openapi.subscription_read
    def retrieve(self, request: Request, guid: str) -> Response:
        return Response(subscription_read(request, guid))

    @openapi.subscription_change
    def partial_update(self, request: Request, guid: str) -> Response:
        asked = parse_uuid("guid", guid)
        serializer = UpdateRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        change = services.SubscriptionUpdate(**serializer.validated_data)
        sub = services.subscription_update(user=request.user, guid=asked, change=change)
        return Response(update_result_body(change, sub))


class SubscriptionOpmlView(APIView):
    """GET and POST /v1/subscriptions.opml: the user's subscriptions as OPML, and an import."""

    parser_classes = OPML_IMPORT_PARSERS
    content_negotiation_class = IgnoreAcceptNegotiation  # the export is OPML whatever Accept says

    @openapi.opml_export
    def get(self, request: Request) -> HttpResponse:
        # Named by their titles where feed checks read them, else by their URLs.
        current = selectors.subscription_current(user=request.user)
        titled = selectors.subscriptions_titled(current)
        found = titled.values_list("feed_url", "feed_title")  # type: ignore[misc]
        body = opml.opml_render(
            feeds=(opml.OpmlFeed(url=url, title=title or None) for url, title in found.iterator()),
            created=clock.now(),
            owner=request.user.get_username(),
        )
        response = HttpResponse(body, content_type=opml.CONTENT_TYPE)
        response["Content-Disposition"] = 'attachment; filename="subscriptions.opml"'
        return response

    @openapi.opml_import
    def post(self, request: Request) -> Response:
        found = opml.opml_parse(_opml_document(request))
        limit = settings.MAX_OPML_ENTRIES
        if len(found) > limit:
            raise InvalidInput(f"too many feeds, at most {limit} per OPML document")
        result = services.subscription_add_many(
            user=request.user, entries=[services.AddEntry(feed_url=feed.url) for feed in found]
        )
        return Response(add_result_body(result))


def _opml_document(request: Request) -> bytes:
    """The body's bytes, or the multipart upload's `file` field (a file or a plain field)."""
    if isinstance(request.data, bytes):
        return request.data
    upload = request.data.get("file") if isinstance(request.data, dict) else None
    if isinstance(upload, UploadedFile):
        return upload.read()
    if isinstance(upload, str):
        return upload.encode()
    if request.content_type.startswith("multipart/"):
        raise InvalidInput("send the OPML document as the file field")
    # An empty body: DRF hands an empty dict instead of calling the parser.
    return b""
