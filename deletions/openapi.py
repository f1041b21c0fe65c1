"""The OpenAPI declarations of DELETE /v1/subscriptions/{guid} and GET /v1/deletions/{id}."""

from drf_spectacular.utils import OpenApiParameter, extend_schema

from api.params import MAX_INTEGER
from api.schema import AUTHENTICATED, WRITE, errors
from deletions.serializers import DeletionRequestedSerializer, DeletionSerializer
from subscriptions.openapi import GUID_PARAMETER

deletion_request = extend_schema(
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

deletion_read = extend_schema(
    parameters=[
        OpenApiParameter(
            "id",
            {"type": "integer", "minimum": 1, "maximum": MAX_INTEGER},
            OpenApiParameter.PATH,
            description="The deletion_id DELETE answered.",
        )
    ],
    responses={200: DeletionSerializer, **errors(*AUTHENTICATED, 404)},
    summary="Read the status of a deletion",
)
