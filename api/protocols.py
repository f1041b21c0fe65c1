"""The view base of the apps' sync protocols (the gpodder.net API with its episode actions, and the
Nextcloud gPodder Sync API): JSON bodies whatever their label, JSON answers whatever the Accept,
400 for bad input, only for an authenticated user, and a path that names a user must name the
authenticated one (401 otherwise). Each protocol's views say how its requests authenticate
(accounts.basic); an authentication with an `accepted(request)` method is told when a request it
authenticated has passed these checks (the gpodder API's sets its session cookie then)."""

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.views import APIView

from api.negotiation import IgnoreAcceptNegotiation
from api.parsers import AnyJSONParser
from api.renderers import JSONRenderer
from core.exceptions import NotAuthorized


def names_user(kwargs: dict[str, Any], user: Any) -> bool:
    """Whether a path that names a user (its `username`) names the authenticated one."""
    return "username" not in kwargs or kwargs["username"] == user.get_username()


# The OpenAPI document describes /v1/; docs/gpodder-api.md and docs/nextcloud.md these.
@extend_schema(exclude=True)
class AppView(APIView):
    permission_classes = [IsAuthenticated]
    parser_classes = [AnyJSONParser]
    renderer_classes = [JSONRenderer]
    content_negotiation_class = IgnoreAcceptNegotiation
    invalid_input_status = 400  # read by api.errors

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        if not names_user(kwargs, request.user):
            raise NotAuthorized()
        accepted = getattr(request.successful_authenticator, "accepted", None)
        if accepted is not None:
            accepted(request)
