"""The /v1/subscriptions endpoints: each action validates, calls one service, serializes."""

import functools
import uuid

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiRequest,
    OpenApiResponse,
    extend_schema,
)
from rest_framework import parsers, viewsets
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.errors import unsupported_media_type_message
from api.negotiation import FirstRenderer
from api.pagination import OpaPagination
from api.params import bad_parameter, parse_timestamp, query_param, reject_unknown
from api.parsers import RawOPMLParser, RawTextXMLParser, RawXMLParser
from api.schema import AUTHENTICATED, WITH_BODY, WRITE, errors
from api.serializers import ErrorSerializer
from core import clock
from core.exceptions import InvalidInput
from deletions import services as deletion_services
from deletions.serializers import DeletionRequestedSerializer
from subscriptions import feeds, opml, selectors, services
from subscriptions.serializers import (
    AddRequestSerializer,
    AddResponseSerializer,
    SubscriptionSerializer,
    UpdateRequestSerializer,
    UpdateResponseSerializer,
    add_response,
    item,
)

GUID_PARAMETER = OpenApiParameter(
    "guid",
    OpenApiTypes.UUID,
    OpenApiParameter.PATH,
    description="Any guid the subscription has had.",
)


def parse_path_guid(value: str) -> uuid.UUID:
    guid = feeds.parse_guid(value)
    if guid is None:
        raise bad_parameter("guid", "must be a UUID")
    return guid


# An item of the OPA get-all page's resolution example, listed with a `since` between its two
# guid changes (the page around it comes from the pagination's own examples).
LIST_EXAMPLE = OpenApiExample(
    "Changed since 2022-05-30",
    response_only=True,
    value={
        "feed_url": "https://example.com/rss1",
        "guid": "daac3ce5-7b16-4cf0-8294-86ad71944a64",
        "is_subscribed": True,
        "subscription_changed": "2022-03-21T18:45:35.513Z",
        "new_guid": "36a47c4c-4aa3-428a-8132-3712a8422002",
        "guid_changed": "2022-12-23T10:24:14.670Z",
    },
)


class SubscriptionPagination(OpaPagination):
    items_key = "subscriptions"


class SubscriptionViewSet(viewsets.ViewSet):
    lookup_field = "guid"
    lookup_value_regex = "[^/]+"
    pagination_class = SubscriptionPagination

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "since",
                OpenApiTypes.DATETIME,
                OpenApiParameter.QUERY,
                description=(
                    "RFC 3339, any precision and offset. Only subscriptions whose "
                    "subscription_changed, guid_changed or deleted is later are listed, each "
                    "under the guid it had at that time."
                ),
            )
        ],
        responses={200: SubscriptionSerializer(many=True), **errors(*AUTHENTICATED)},
        summary="List subscriptions, or those changed since a time",
        description=(
            "Subscribed, unsubscribed and deleted subscriptions, in the order they were "
            "created. `guid` is the guid the subscription had at `since` (its first guid "
            "without `since`), `new_guid` its current guid when that differs. A bad value, a "
            "parameter given twice or an unknown parameter is a 405 naming it."
        ),
        examples=[LIST_EXAMPLE],
    )
    def list(self, request: Request) -> Response:
        paginator = self.pagination_class()
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
        return paginator.get_paginated_response([item(sub, sub.shown_guid) for sub in page])

    @extend_schema(
        request=AddRequestSerializer,
        responses={200: AddResponseSerializer, **errors(*AUTHENTICATED, *WITH_BODY, *WRITE)},
        summary="Add subscriptions",
    )
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
        return Response(add_response(result))

    @extend_schema(
        parameters=[GUID_PARAMETER],
        responses={200: SubscriptionSerializer, **errors(*AUTHENTICATED, 404, 410)},
        summary="Read a subscription",
    )
    def retrieve(self, request: Request, guid: str) -> Response:
        sub = selectors.subscription_shown(user=request.user, guid=parse_path_guid(guid))
        return Response(item(sub, sub.shown_guid))

    @extend_schema(
        parameters=[GUID_PARAMETER],
        request=UpdateRequestSerializer,
        responses={
            200: UpdateResponseSerializer,
            **errors(*AUTHENTICATED, *WITH_BODY, *WRITE, 404, 410),
        },
        summary="Change a subscription",
    )
    def partial_update(self, request: Request, guid: str) -> Response:
        asked = parse_path_guid(guid)
        serializer = UpdateRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        change = services.SubscriptionUpdate(**serializer.validated_data)
        sub = services.subscription_update(user=request.user, guid=asked, change=change)
        # The answer holds only what was asked about (product.md section 7).
        answer: dict[str, object] = {}
        if change.new_feed_url is not None:
            answer.update(new_feed_url=sub.feed_url, subscription_changed=sub.subscription_changed)
        if change.is_subscribed is not None:
            answer.update(
                is_subscribed=sub.is_subscribed, subscription_changed=sub.subscription_changed
            )
        if change.new_guid is not None:
            answer.update(new_guid=sub.guid, guid_changed=sub.guid_changed)
        return Response(UpdateResponseSerializer(answer).data)

    @extend_schema(
        parameters=[GUID_PARAMETER],
        request=None,
        responses={
            202: DeletionRequestedSerializer,
            **errors(*AUTHENTICATED, *WRITE, 404, 410),
        },
        summary="Delete a subscription (asynchronously)",
        description=(
            "Answers 202 at once with the id to follow at GET /v1/deletions/{id}. "
            "While a deletion is pending, a repeated DELETE answers the same id."
        ),
    )
    def destroy(self, request: Request, guid: str) -> Response:
        deletion = deletion_services.deletion_request(user=request.user, guid=parse_path_guid(guid))
        return Response(DeletionRequestedSerializer(deletion).data, status=202)


OPML_PARSERS = [RawOPMLParser, RawXMLParser, RawTextXMLParser]
OPML_MEDIA_TYPES = [parser.media_type for parser in OPML_PARSERS]
# What schemathesis (and a reader) can generate: an OPML document the import accepts. The real
# reader takes any OPML; this only keeps generated "valid" bodies valid.
OPML_SCHEMA = {
    "type": "string",
    "description": "An OPML document (any version, any encoding XML allows; no DTD).",
    "pattern": (
        r'^<opml version="2\.0"><body>'
        r'(<outline text="[a-z]{1,8}" xmlUrl="https://[a-z]{1,12}\.example/feed"/>){0,5}'
        r"</body></opml>$"
    ),
}
OPML_IMPORT_EXAMPLE = OpenApiExample(
    "An app's export",
    value=(
        '<?xml version="1.0" encoding="utf-8"?>\n<opml version="2.0"><head><title>Podcasts'
        '</title></head><body><outline type="rss" text="Podnews" '
        'xmlUrl="https://podnews.net/rss"/></body></opml>'
    ),
)
OPML_IMPORT_PARSERS = [*OPML_PARSERS, parsers.MultiPartParser]
UNSUPPORTED_OPML_TYPE = OpenApiResponse(
    ErrorSerializer, description=unsupported_media_type_message(OPML_IMPORT_PARSERS) or ""
)


class SubscriptionOpmlView(APIView):
    """GET and POST /v1/subscriptions.opml: the user's subscriptions as OPML, and an import."""

    parser_classes = OPML_IMPORT_PARSERS
    content_negotiation_class = FirstRenderer  # the export is OPML whatever Accept says

    @extend_schema(
        operation_id="subscriptions_opml_export",
        responses={
            (200, "text/x-opml"): OpenApiResponse(
                {"type": "string"},
                description=(
                    "OPML 2.0 of the subscribed, not deleted subscriptions, as an attachment "
                    "(Content-Disposition)."
                ),
            ),
            **errors(*AUTHENTICATED),
        },
        summary="Export subscriptions as OPML",
    )
    def get(self, request: Request) -> HttpResponse:
        # No title is stored yet: the export names each feed by its URL (OPML requires `text`).
        found = selectors.subscription_current(user=request.user).values_list("feed_url", flat=True)
        body = opml.opml_render(
            feeds=(opml.OpmlFeed(url=url) for url in found.iterator()),
            created=clock.now(),
            owner=request.user.get_username(),
        )
        response = HttpResponse(body, content_type=opml.CONTENT_TYPE)
        response["Content-Disposition"] = 'attachment; filename="subscriptions.opml"'
        return response

    @extend_schema(
        operation_id="subscriptions_opml_import",
        request={
            **{
                media_type: OpenApiRequest(OPML_SCHEMA, examples=[OPML_IMPORT_EXAMPLE])
                for media_type in OPML_MEDIA_TYPES
            },
            "multipart/form-data": {
                "type": "object",
                "properties": {"file": {**OPML_SCHEMA, "description": "The OPML file."}},
                "required": ["file"],
            },
        },
        responses={
            200: AddResponseSerializer,
            **errors(*AUTHENTICATED, *WITH_BODY, *WRITE),
            415: UNSUPPORTED_OPML_TYPE,
        },
        summary="Import subscriptions from OPML",
        description=(
            "Every outline with an `xmlUrl`, nested ones included, is added as by "
            "POST /v1/subscriptions, with the same answer. A document that is not well-formed, "
            "not OPML, or has a DTD or entities is a 405 and stores nothing."
        ),
    )
    def post(self, request: Request) -> Response:
        found = opml.opml_parse(_opml_document(request))
        limit = settings.MAX_OPML_ENTRIES
        if len(found) > limit:
            raise InvalidInput(f"too many feeds, at most {limit} per OPML document")
        result = services.subscription_add_many(
            user=request.user, entries=[services.AddEntry(feed_url=feed.url) for feed in found]
        )
        return Response(add_response(result))


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
