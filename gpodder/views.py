"""The gpodder.net API v2 endpoints: each checks the path's user, calls one service or selector,
and answers as gpodder apps expect (docs/gpodder-api.md)."""

import json
from typing import Any, cast

from django.contrib.auth import SESSION_KEY, login, logout
from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Empty, Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.sessions import APP, APP_PASSWORD_SESSION_KEY, SURFACE_SESSION_KEY
from api.negotiation import IgnoreAcceptNegotiation
from api.params import query_param
from api.renderers import JSONRenderer
from core import clock
from core.exceptions import InvalidInput, NotAuthorized
from gpodder import diagnostics, selectors, services
from gpodder.authentication import MODEL_BACKEND, GpodderAuthentication
from gpodder.parsers import AnyJSONParser, RawBodyParser
from gpodder.serializers import (
    DeviceSettingsSerializer,
    SubscriptionChangesSerializer,
    UrlListSerializer,
)
from subscriptions import opml

# The largest `since` a time can hold (the last second of year 9999).
MAX_SINCE = 253_402_300_799


# The OpenAPI document describes /v1/; docs/gpodder-api.md describes this API.
@extend_schema(exclude=True)
class GpodderView(APIView):
    """Basic or the session cookie; JSON bodies whatever their label; 400 for bad input; and a
    path naming another user than the authenticated one is a 401."""

    authentication_classes = [GpodderAuthentication]
    permission_classes = [IsAuthenticated]
    parser_classes = [AnyJSONParser]
    renderer_classes = [JSONRenderer]
    content_negotiation_class = IgnoreAcceptNegotiation
    invalid_input_status = 400

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        if kwargs.get("username") != request.user.get_username():
            raise NotAuthorized()
        # A successful Basic authentication sets the session cookie, unless it came with the
        # app session of this very user (an app sending both writes no session again).
        session = request._request.session
        app_password_id = getattr(request, "app_password_id", None)
        if getattr(request, "by_basic", False) and (
            session.get(SESSION_KEY) != str(request.user.pk)
            or session.get(SURFACE_SESSION_KEY) != APP
            or session.get(APP_PASSWORD_SESSION_KEY) != app_password_id
        ):
            login(request._request, request.user, backend=MODEL_BACKEND)  # type: ignore[arg-type]
            # The session remembers the app password it was made with: revoking it ends it.
            if app_password_id is None:
                session.pop(APP_PASSWORD_SESSION_KEY, None)
            else:
                session[APP_PASSWORD_SESSION_KEY] = app_password_id


# The answers of a request refused whole, which its device's page tells of: bad input, a
# conflict to send again, a body too large or of another type, too many requests.
REFUSALS = (400, 409, 413, 415, 429)


class SyncNoting(APIView):
    """A view of a sync request: it notes what the request did on its device, and a refusal
    with the reason its answer gave (gpodder.diagnostics), for the device's page."""

    protocol: str = diagnostics.Protocol.GPODDER
    data: str = diagnostics.Data.SUBSCRIPTIONS

    def note(self, request: Request, notes: dict[str | None, diagnostics.SyncNote]) -> None:
        """`notes`: device id (None: the device of the same app) to what it did."""
        diagnostics.sync_note_record(
            user_id=cast(int, request.user.pk),
            protocol=self.protocol,
            agent=request.META.get("HTTP_USER_AGENT", ""),
            session_key=self.session_key(request),
            notes=notes,
        )

    def session_key(self, request: Request) -> str | None:
        """The app's session on the gpodder API (its cookie's key, read from the cookie alone)."""
        session = getattr(request._request, "session", None)
        return None if session is None else session.session_key

    def refused_devices(self, request: Request, body: Any) -> list[str | None]:
        """The devices a refused request is of: the one its path names."""
        device = self.kwargs.get("device")
        return [device] if services.device_id_valid(device) else []

    def handle_exception(self, exc: Exception) -> Response:
        response = super().handle_exception(exc)
        user = getattr(self.request, "_user", None)
        if response.status_code in REFUSALS and user is not None and user.is_authenticated:
            body = _parsed_body(self.request)
            message = getattr(response, "data", None) or {}
            note = diagnostics.refusal(
                data=self.data,
                pull=self.request.method == "GET",
                items=_items(body),
                message=str(message.get("message", "")) if isinstance(message, dict) else "",
            )
            devices = self.refused_devices(self.request, body)
            if devices:
                self.note(self.request, dict.fromkeys(devices, note))
        return response


def _parsed_body(request: Request) -> Any:
    """The request's body as parsed, or None when it was not (reading it now could fail)."""
    parsed = getattr(request, "_full_data", Empty)
    return None if parsed is Empty else parsed


def _items(body: Any) -> int:
    """How many items (episode actions, URLs) a refused body held, when it can be told."""
    if isinstance(body, list):
        return len(body)
    if isinstance(body, dict):
        lists = (body.get("add"), body.get("remove"))
        return sum(len(urls) for urls in lists if isinstance(urls, list))
    return 0


def follows_update_urls(request: Request) -> bool:
    """gPodder (mygpoclient, under its own name or gPodder's) rewrites its URLs as an upload's
    update_urls say; AntennaPod and Kasts do not, and keep the URL they sent."""
    agent = request.META.get("HTTP_USER_AGENT", "").lower()
    return "mygpoclient" in agent or "gpodder/" in agent


def empty() -> Response:
    """What gpodder apps count as success for a write: 200 with an empty body."""
    return Response(status=200)


class LoginView(GpodderView):
    def post(self, request: Request, username: str) -> Response:
        return empty()


class LogoutView(GpodderView):
    def post(self, request: Request, username: str) -> Response:
        logout(request._request)
        return empty()


class DeviceListView(GpodderView):
    def get(self, request: Request, username: str) -> Response:
        return Response(
            [
                {"id": d.id, "caption": d.caption, "type": d.type, "subscriptions": d.subscriptions}
                for d in selectors.device_list(user=request.user)
            ]
        )


class DeviceView(GpodderView):
    def post(self, request: Request, username: str, device: str) -> Response:
        serializer = DeviceSettingsSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        services.device_update(user=request.user, device_id=device, **serializer.validated_data)
        return empty()


class SyncDevicesView(GpodderView):
    """One sync group per user: every device is synchronised with every other."""

    def get(self, request: Request, username: str) -> Response:
        return Response(
            {"synchronized": [selectors.device_ids(user=request.user)], "not-synchronized": []}
        )

    post = get


def since_param(request: Request, *, required: bool = True) -> int:
    """The query's `since`: whole seconds since the epoch; 0 when absent and not `required`."""
    value = query_param(request, "since")
    if value is None and not required:
        return 0
    # The length first: int() refuses a string of over 4,300 digits with an error of its own.
    if (
        value is None
        or not value.isascii()
        or not value.isdigit()
        or len(value) > len(str(MAX_SINCE))
        or int(value) > MAX_SINCE
    ):
        raise InvalidInput(
            "since must be whole seconds since the epoch (0 for everything)",
            errors={"since": ["Must be a non-negative integer."]},
        )
    return int(value)


class SubscriptionsView(SyncNoting, GpodderView):
    def get(self, request: Request, username: str, device: str) -> Response:
        since = since_param(request)
        found = services.device_touch(user=request.user, device_id=device)
        changes = services.subscription_pull(user=request.user, device=found, since=since)
        pulled = diagnostics.subscriptions_pulled(
            added=len(changes.add), removed=len(changes.remove)
        )
        self.note(request, {device: pulled})
        return Response(
            {"add": changes.add, "remove": changes.remove, "timestamp": changes.timestamp}
        )

    def post(self, request: Request, username: str, device: str) -> Response:
        data = request.data
        if request.stream is None:  # no body at all (DRF reads one as {})
            # Never read as "no changes": a client whose body was lost would believe it sent it.
            raise InvalidInput(
                'the body is empty: send {"add": [...], "remove": [...]}',
                errors={"body": ["Send a JSON object with add and remove."]},
            )
        serializer = SubscriptionChangesSerializer(data=data)
        serializer.is_valid(raise_exception=True)
        services.subscription_changes_check(**serializer.validated_data)
        found = services.device_touch(user=request.user, device_id=device)
        upload = services.subscription_upload(
            user=request.user,
            device=found,
            follows_update_urls=follows_update_urls(request),
            **serializer.validated_data,
        )
        uploaded = diagnostics.subscriptions_uploaded(
            **serializer.validated_data, update_urls=upload.update_urls
        )
        self.note(request, {device: uploaded})
        return Response({"timestamp": upload.timestamp, "update_urls": upload.update_urls})


def _list_answer(urls: list[str], fmt: str, owner: str) -> HttpResponse | Response:
    if fmt == "json":
        return Response(urls)
    if fmt == "txt":
        body = "".join(f"{url}\n" for url in urls)
        return HttpResponse(body, content_type="text/plain; charset=utf-8")
    document = opml.opml_render(
        feeds=(opml.OpmlFeed(url=url) for url in urls), created=clock.now(), owner=owner
    )
    return HttpResponse(document, content_type=opml.CONTENT_TYPE)


def _sent_urls(body: Any, fmt: str) -> list[str]:
    """The URLs of a simple API PUT, in the format its path names."""
    data = body if isinstance(body, bytes) else b""
    if not data.strip():
        # Never read as "no subscriptions": a body lost on the way would empty the list.
        raise InvalidInput("the body is empty: send the list (an empty one as [] in json)")
    if fmt == "opml":
        return [feed.url for feed in opml.opml_parse(data)]
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidInput("the body is not UTF-8") from None
    if not text.strip():  # a byte-order mark alone
        raise InvalidInput("the body is empty: send the list (an empty one as [] in json)")
    if fmt == "txt":
        return [line.strip() for line in text.splitlines() if line.strip()]
    try:
        urls = json.loads(text) if text.strip() else []
    except (ValueError, RecursionError):
        raise InvalidInput("the body is not a JSON list of URLs") from None
    serializer = UrlListSerializer(data=urls)
    serializer.is_valid(raise_exception=True)
    return list(serializer.validated_data)


class SimpleUserSubscriptionsView(GpodderView):
    def get(self, request: Request, username: str, fmt: str) -> HttpResponse | Response:
        urls = services.subscription_list(user=request.user, device=None)
        return _list_answer(urls, fmt, username)


class SimpleDeviceSubscriptionsView(SyncNoting, GpodderView):
    parser_classes = [RawBodyParser]

    def get(self, request: Request, username: str, device: str, fmt: str) -> Any:
        found = services.device_touch(user=request.user, device_id=device)
        urls = services.subscription_list(user=request.user, device=found)
        self.note(request, {device: diagnostics.list_pulled(len(urls))})
        return _list_answer(urls, fmt, username)

    def put(self, request: Request, username: str, device: str, fmt: str) -> Response:
        urls = _sent_urls(request.data, fmt)
        services.device_id_checked(device)
        services.subscription_check_count(urls)
        found = services.device_touch(user=request.user, device_id=device)
        unusable = services.subscription_replace(user=request.user, device=found, urls=urls)
        self.note(request, {device: diagnostics.list_uploaded(urls=urls, unusable=unusable)})
        return empty()
