"""Endpoints that belong to no app: the API index, capabilities, the catch-all 404, health."""

from typing import Any

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.schema import errors
from core import version

SERVER_URN = f"urn:{version.NAME}:server"
CAPABILITIES = {
    "urn:opa:core": {"1.0.0": {"status": "STABLE", "root": "/v1"}},
    # GET and POST {root}/subscriptions.opml: OPML 2.0 export and import (docs/api.md,
    # "OPML import and export").
    "urn:opa:extra:opml": {"1.0.0": {"status": "STABLE", "root": "/v1"}},
    # The gpodder.net API v2 over the same subscriptions (docs/gpodder-api.md).
    "urn:opa:extra:gpodder": {"2": {"status": "STABLE", "root": "/api/2"}},
    # Which software answers, and its release, for a self-hoster or a bug report: shaped as
    # every other capability (a URN, its versions), so that a client reading them all reads it.
    SERVER_URN: {version.VERSION: {"status": "STABLE", "root": "/"}},
}
_CAPABILITY = {  # one version of one URN
    "type": "object",
    "properties": {"status": {"type": "string"}, "root": {"type": "string"}},
    "required": ["status", "root"],
}
CAPABILITIES_SCHEMA = {
    "type": "object",
    "properties": {
        "urn:opa:core": {"type": "object", "additionalProperties": _CAPABILITY},
        SERVER_URN: {"type": "object", "additionalProperties": _CAPABILITY},
    },
    "required": ["urn:opa:core", SERVER_URN],
    # Every other key is a URN (urn:opa:extra:...), its versions by number.
    "additionalProperties": {"type": "object", "additionalProperties": _CAPABILITY},
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
                CAPABILITIES_SCHEMA,
                description="Versions and features by URN, this server's release among them",
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
    """200 when the database and the broker answer, 503 otherwise; with the server's version."""
    checks = {"database": _check_database(), "broker": _check_broker()}
    healthy = all(value in ("ok", "in-process") for value in checks.values())
    body: dict[str, Any] = {
        "status": "ok" if healthy else "unavailable",
        **checks,
        "version": version.VERSION,
    }
    if connection.vendor == "sqlite" and checks["database"] == "ok":
        body["sqlite"] = _sqlite_settings()
    return JsonResponse(body, status=200 if healthy else 503)


def _sqlite_settings() -> dict[str, Any]:
    """What keeps the home server's writes safe, as its connections really have it: WAL,
    synchronous=FULL (2), and the busy timeout in milliseconds (docs/self-hosting.md)."""
    with connection.cursor() as cursor:
        found = {}
        for pragma in ("journal_mode", "synchronous", "busy_timeout"):
            cursor.execute(f"PRAGMA {pragma}")
            found[pragma] = cursor.fetchone()[0]
    return found


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
        import redis

        client = redis.Redis.from_url(
            settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2
        )
        client.ping()
        client.close()
        return "ok"
    except Exception as exc:  # any failure means unhealthy, whatever the client raised
        return f"error: {exc.__class__.__name__}"
