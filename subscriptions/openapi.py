"""The OpenAPI declarations of /v1/subscriptions and /v1/subscriptions.opml: one decorator per
view action, the examples, and the hook that states what request bodies refuse."""

from typing import Any

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiRequest,
    OpenApiResponse,
    extend_schema,
)

from api.errors import unsupported_media_type_message
from api.schema import AUTHENTICATED, WITH_BODY, WRITE, errors
from api.serializers import ErrorSerializer
from subscriptions.parsers import OPML_IMPORT_PARSERS, OPML_PARSERS
from subscriptions.serializers import (
    AddRequestSerializer,
    AddResponseSerializer,
    SubscriptionSerializer,
    UpdateRequestSerializer,
    UpdateResponseSerializer,
)

GUID_PARAMETER = OpenApiParameter(
    "guid",
    OpenApiTypes.UUID,
    OpenApiParameter.PATH,
    description="Any guid the subscription has had.",
)

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

subscription_list = extend_schema(
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

subscription_add = extend_schema(
    request=AddRequestSerializer,
    responses={200: AddResponseSerializer, **errors(*AUTHENTICATED, *WITH_BODY, *WRITE)},
    summary="Add subscriptions",
)

subscription_read = extend_schema(
    parameters=[GUID_PARAMETER],
    responses={200: SubscriptionSerializer, **errors(*AUTHENTICATED, 404, 410)},
    summary="Read a subscription",
)

subscription_change = extend_schema(
    parameters=[GUID_PARAMETER],
    request=UpdateRequestSerializer,
    responses={
        200: UpdateResponseSerializer,
        **errors(*AUTHENTICATED, *WITH_BODY, *WRITE, 404, 410),
    },
    summary="Change a subscription",
)

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
UNSUPPORTED_OPML_TYPE = OpenApiResponse(
    ErrorSerializer, description=unsupported_media_type_message(OPML_IMPORT_PARSERS) or ""
)

opml_export = extend_schema(
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

opml_import = extend_schema(
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


def strict_request_bodies(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """drf-spectacular hook: say in the document what request bodies refuse.

    A PATCH without a body, with no field or with an unknown one is a 405, and so is an add of
    more entries than the limit, or an OPML import without a document; a document that allowed
    them would promise what the server refuses.
    """
    # Indexed directly: a renamed component must fail here, not quietly lose its constraints.
    schemas = result["components"]["schemas"]
    schemas["AddRequestRequest"]["properties"]["subscriptions"]["maxItems"] = (
        settings.MAX_ADD_ENTRIES
    )
    schemas["PatchedUpdateRequestRequest"].update(additionalProperties=False, minProperties=1)
    result["paths"]["/v1/subscriptions/{guid}"]["patch"]["requestBody"]["required"] = True
    # An OPML import without a document is a 405, like any body that is not OPML.
    result["paths"]["/v1/subscriptions.opml"]["post"]["requestBody"]["required"] = True
    return result
