"""The /v1/deletions endpoint: the status of a deletion by its id."""

import re

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from config.api.schema import AUTHENTICATED, errors
from config.exceptions import InvalidInput
from deletions import selectors
from deletions.serializers import DeletionSerializer

# Clients generated from the OPA schema, which types the id as a number, may send 25.0.
_INTEGRAL = re.compile(r"^([0-9]{1,19})(?:\.0*)?$")
_MAX_ID = 2**63 - 1


def parse_deletion_id(value: str) -> int:
    match = _INTEGRAL.match(value)
    number = int(match.group(1)) if match else 0
    if not 1 <= number <= _MAX_ID:
        raise InvalidInput(errors={"id": ["Must be a positive integer below 2**63."]})
    return number


class DeletionViewSet(viewsets.ViewSet):
    lookup_field = "id"
    lookup_value_regex = "[^/]+"

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "id",
                {"type": "integer", "minimum": 1, "maximum": _MAX_ID},
                OpenApiParameter.PATH,
                description="The deletion_id DELETE answered.",
            )
        ],
        responses={200: DeletionSerializer, **errors(*AUTHENTICATED, 404)},
        summary="Read the status of a deletion",
    )
    def retrieve(self, request: Request, id: str) -> Response:
        deletion = selectors.deletion_get(user=request.user, deletion_id=parse_deletion_id(id))
        return Response(DeletionSerializer(deletion).data)
