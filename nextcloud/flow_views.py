"""The app's two paths of Nextcloud's Login Flow v2 (docs/nextcloud.md, "Logging in"): start a
flow, and poll it. Plain Django views: no authentication, no CSRF (the app has no cookie to
forge with), any body or none, never a redirect; every answer JSON and never cached.

The page the person allows the app on is one of the people's site (web.views.signing.login_flow).
"""

import json
import math
from typing import Any

from django.conf import settings
from django.core.exceptions import SuspiciousOperation
from django.http import HttpRequest, JsonResponse, QueryDict
from django.http.multipartparser import MultiPartParserError
from django.urls import get_script_prefix, reverse
from django.views.decorators.csrf import csrf_exempt
from rest_framework.exceptions import Throttled

from api.errors import error_body
from api.throttles import LimitNamingThrottle
from core.exceptions import NotFound
from nextcloud import flows


class LoginFlowThrottle(LimitNamingThrottle):
    """Flows started per client address (THROTTLE_LOGIN_FLOW_RATE): each is a row until it
    expires, and nobody needs many."""

    scope = "login_flow"
    limit_name = "Nextcloud logins started per address"

    def get_cache_key(self, request: Any, view: Any) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


def _json(body: Any, status: int = 200) -> JsonResponse:
    response = JsonResponse(body, status=status, safe=False)
    response["Cache-Control"] = "no-store"
    return response


def _not_found() -> JsonResponse:
    """Nextcloud's answer to a poll that finds nothing (yet): a 404 with an empty list."""
    return _json([], status=404)


def _post_only(request: HttpRequest) -> JsonResponse | None:
    if request.method == "POST":
        return None
    response = _json(error_body(405, "Method not allowed: POST"), status=405)
    response["Allow"] = "POST"
    return response


def server_of(request: HttpRequest) -> str:
    """The address the app uses from now on, without a trailing slash (S + "/index.php/apps/..."
    reaches us): PUBLIC_URL when set, else where the request came to as Django sees it (https
    behind a TLS proxy that says so, SECURE_PROXY_SSL_HEADER)."""
    return settings.PUBLIC_URL or request.build_absolute_uri("/").rstrip("/")


def _absolute(request: HttpRequest, path: str) -> str:
    """`path` (from reverse, with the script prefix) as an absolute URL under server_of."""
    prefix = get_script_prefix()
    return server_of(request) + "/" + path[len(prefix) :]


@csrf_exempt
def start(request: HttpRequest) -> JsonResponse:
    """POST /index.php/login/v2: a new flow, its poll token and the page to open."""
    refused = _post_only(request)
    if refused is not None:
        return refused
    try:
        LoginFlowThrottle().allow_request(request, None)
    except Throttled as exc:
        response = _json(error_body(429, str(exc.detail)), status=429)
        wait = getattr(exc, "wait", None)
        if wait is not None:
            response["Retry-After"] = str(max(1, math.ceil(wait)))
        return response
    started = flows.login_flow_start(
        client_name=request.META.get("HTTP_USER_AGENT", ""),
        address=LoginFlowThrottle().get_ident(request),  # type: ignore[arg-type]
    )
    # The poll endpoint under the prefix the app used (/index.php/ or none), as Nextcloud does.
    prefix = "/index.php" if request.path_info.lstrip("/").startswith("index.php/") else ""
    return _json(
        {
            "poll": {
                "token": started.poll_token,
                "endpoint": server_of(request) + prefix + "/login/v2/poll",
            },
            "login": _absolute(
                request, reverse("web:login-flow", kwargs={"token": started.login_token})
            ),
        }
    )


def _token_of(request: HttpRequest) -> object:
    """The poll token from a form body (AntennaPod's), a JSON body (whatever its Content-Type
    says), or the query string; None when there is none."""
    body = request.body
    if body.lstrip()[:1] == b"{":
        try:
            parsed = json.loads(body)
        except (ValueError, RecursionError):  # not JSON, or nested past what Python parses
            parsed = None
        if isinstance(parsed, dict) and "token" in parsed:
            return parsed["token"]
    try:
        form = request.POST if request.POST else QueryDict(body)
        token = form.get("token")
    except (ValueError, SuspiciousOperation, MultiPartParserError):
        token = None  # a body no form can be read from: no token in it
    return token if token is not None else request.GET.get("token")


@csrf_exempt
def poll(request: HttpRequest) -> JsonResponse:
    """POST /index.php/login/v2/poll: 404 `[]` until the person allowed the app; then, once, the
    server, the username and a new app password."""
    refused = _post_only(request)
    if refused is not None:
        return refused
    try:
        credentials = flows.login_flow_poll(poll_token=_token_of(request))
    except NotFound:
        return _not_found()
    return _json(
        {
            "server": server_of(request),
            "loginName": credentials.login_name,
            "appPassword": credentials.app_password,
        }
    )
