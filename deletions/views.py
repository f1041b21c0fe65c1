"""The /v1/deletions endpoint: the status of a deletion by its id."""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from api.params import MAX_INTEGER, parse_integer
from api.schema import AUTHENTICATED, errors
from deletions import selectors
from deletions.serializers import DeletionSerializer


class DeletionViewSet(viewsets.ViewSet):
    lookup_field = "id"
    lookup_value_regex = "[^/]+"

    @extend_schema(
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
    def retrieve(self, request: Request, id: str) -> Response:
        deletion = selectors.deletion_get(user=request.user, deletion_id=parse_integer("id", id))
        return Response(DeletionSerializer(deletion).data)
