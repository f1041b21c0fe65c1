"""The deletion endpoints: DELETE /v1/subscriptions/{guid} asks for one, GET /v1/deletions/{id}
tells how it went."""

from rest_framework import viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from api.params import parse_integer, parse_uuid
from deletions import openapi, selectors, services
from deletions.serializers import DeletionRequestedSerializer, DeletionSerializer


# The DELETE action of /v1/subscriptions/{guid}, for the subscriptions' viewset: subscriptions know
# nothing of deletions, so config/urls.py joins the two. (No docstring: the OpenAPI document would
# show it as the description of the viewset's operations.)
class SubscriptionDestroyMixin:
    @openapi.deletion_request
    def destroy(self, request: Request, guid: str) -> Response:
        deletion = services.deletion_request(user=request.user, guid=parse_uuid("guid", guid))
        return Response(DeletionRequestedSerializer(deletion).data, status=202)


class DeletionViewSet(viewsets.ViewSet):
    lookup_field = "id"
    lookup_value_regex = "[^/]+"

    @openapi.deletion_read
    def retrieve(self, request: Request, id: str) -> Response:
        deletion = selectors.deletion_get(user=request.user, deletion_id=parse_integer("id", id))
        return Response(DeletionSerializer(deletion).data)
