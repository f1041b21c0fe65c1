"""Endpoints that belong to no app: the API index, capabilities, the catch-all 404, health."""

from typing import Any

import redis
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.schema import errors

CAPABILITIES = {
    "urn:opa:core": {"1.0.0": {"status": "STABLE", "root": "/v1"}},
    # GET and POST {root}/subscriptions.opml: OPML 2.0 export and import (docs/api.md,
    # "OPML import and export").
    "urn:opa:extra:opml": {"1.0.0": {"status": "STABLE", "root": "/v1"}},
    # The gpodder.net API v2 over the same subscriptions (docs/gpodder-api.md).
    "urn:opa:extra:gpodder": {"2": {"status": "STABLE", "root": "/api/2"}},
}


class PublicView(APIView):
    """An endpoint anyone may call, without a token."""

    authentication_classes = []
    permission_classes = [AllowAny]


class IndexView(PublicView):
    @extend_schema(exclude=True)
    def get(self, request: Request) -> Response:
        return Response(
            {
                "capabilities": request.build_absolute_uri("/v1/capabilities"),
                "login": request.build_absolute_uri("/v1/auth/login"),
                "subscriptions": request.build_absolute_uri("/v1/subscriptions"),
                "openapi": request.build_absolute_uri("/v1/openapi.json"),
                "docs": request.build_absolute_uri("/v1/docs/"),
            }
        )


class CapabilitiesView(PublicView):
    @extend_schema(
        responses={
            200: OpenApiResponse(
                OpenApiTypes.OBJECT,
                description="Versions and features by URN",
                examples=[OpenApiExample("This server", value=CAPABILITIES)],
            ),
            **errors(429),
        },
        summary="API versions and features",
    )
    def get(self, request: Request) -> Response:
        return Response(CAPABILITIES)


class NotFoundView(PublicView):
    """Answers every method on every unknown /v1/ path with the 404 error object."""

    throttle_classes = []

    @extend_schema(exclude=True)
    def http_method_not_allowed(self, request: Any, *args: Any, **kwargs: Any) -> Response:
        raise NotFound()

    options = http_method_not_allowed


def health(request: HttpRequest) -> JsonResponse:
    """200 when the database and the broker answer, 503 otherwise."""
    checks = {"database": _check_database(), "broker": _check_broker()}
    healthy = all(value in ("ok", "in-process") for value in checks.values())
    return JsonResponse(
        {"status": "ok" if healthy else "unavailable", **checks},
        status=200 if healthy else 503,
    )


def _check_database() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return "ok"
    except Exception as exc:  # any failure means unhealthy, whatever the driver raised
        return f"error: {exc.__class__.__name__}"


def _check_broker() -> str:
    if not settings.REDIS_URL:
        return "in-process"
    try:
        client = redis.Redis.from_url(
            settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2
        )
        client.ping()
        client.close()
        return "ok"
    except Exception as exc:  # any failure means unhealthy, whatever the client raised
        return f"error: {exc.__class__.__name__}"
