"""The /v1/auth endpoints: each validates, calls one service, and answers the tokens."""

from typing import Any

from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from accounts import openapi, services
from accounts.serializers import LoginSerializer, RefreshSerializer
from accounts.throttles import count_login_attempt, refuse_while_throttled
from api.fields import format_timestamp
from api.views import PublicView

REFRESH_ENDPOINT = "/v1/auth/refresh"


def tokens_body(tokens: services.Tokens) -> dict[str, Any]:
    return {
        "access_token": tokens.access_token,
        "expires_in": tokens.expires_in,
        "refresh_token": tokens.refresh_token,
        "refresh_expires": format_timestamp(tokens.refresh_expires),
    }


class LoginView(PublicView):
    """Every attempt counts against the login throttle shared by every surface that takes a
    password (accounts.throttles): a lockout earned here holds there, and the reverse."""

    @openapi.token_login
    def post(self, request: Request) -> Response:
        serializer = LoginSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        username = serializer.validated_data["username"]
        refuse_while_throttled(request, username)
        count_login_attempt(request, username)
        tokens = services.token_login(**serializer.validated_data)
        return Response({**tokens_body(tokens), "refresh_endpoint": REFRESH_ENDPOINT})


class RefreshView(PublicView):
    @openapi.token_refresh
    def post(self, request: Request) -> Response:
        serializer = RefreshSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return Response(tokens_body(services.token_refresh(**serializer.validated_data)))


class LogoutView(PublicView):
    @openapi.token_logout
    def post(self, request: Request) -> Response:
        serializer = RefreshSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        services.token_logout(**serializer.validated_data)
        return Response(status=status.HTTP_204_NO_CONTENT)
