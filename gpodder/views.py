"""The gpodder.net API v2 endpoints: each checks the path's user, calls one service or selector,
and answers as gpodder apps expect (docs/gpodder-api.md)."""

import json
from typing import Any

from django.contrib.auth import logout
from django.http import HttpRequest, HttpResponse
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.basic import BasicThenSessionAuthentication
from api.params import since_param
from api.parsers import RawBodyParser, app_json
from api.protocols import AppView
from api.renderers import json_answer
from core import clock
from core.exceptions import InvalidInput
from gpodder import diagnostics, selectors, services
from gpodder.noting import SyncNoting, note_sync
from gpodder.serializers import (
    DeviceSettingsSerializer,
    SubscriptionChangesSerializer,
    UrlListSerializer,
)
from subscriptions import opml


class GpodderView(AppView):
    """Basic, or the session cookie a Basic authentication set (accounts.basic)."""

    authentication_classes = [BasicThenSessionAuthentication]


def follows_update_urls(request: Request | HttpRequest) -> bool:
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


def subscriptions_pulled(
    request: Request | HttpRequest, *, device: str, session_key: str | None
) -> dict[str, Any]:
    """A subscription pull's answer, noted on its device: the view's and the fast path's
    (fastpath; `session_key`: the request's app session)."""
    since = since_param(request)
    changes = services.subscription_pull(user=request.user, device_id=device, since=since)
    pulled = diagnostics.subscriptions_pulled(added=len(changes.add), removed=len(changes.remove))
    note_sync(request, diagnostics.Protocol.GPODDER, session_key, {device: pulled})
    return {"add": changes.add, "remove": changes.remove, "timestamp": changes.timestamp}


def subscriptions_uploaded(
    request: Request | HttpRequest, data: Any, *, device: str, session_key: str | None
) -> dict[str, Any]:
    """A subscription upload's answer, `data` its body read, noted on its device: the view's
    and the fast path's."""
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
    note_sync(request, diagnostics.Protocol.GPODDER, session_key, {device: uploaded})
    return {"timestamp": upload.timestamp, "update_urls": upload.update_urls}


class SubscriptionsView(SyncNoting, GpodderView):
    def get(self, request: Request, username: str, device: str) -> Response:
        return Response(
            subscriptions_pulled(request, device=device, session_key=self.session_key(request))
        )

    def post(self, request: Request, username: str, device: str) -> Response:
        data = request.data
        if request.stream is None:  # no body at all (DRF reads one as {})
            # Never read as "no changes": a client whose body was lost would believe it sent it.
            raise InvalidInput(
                'the body is empty: send {"add": [...], "remove": [...]}',
                errors={"body": ["Send a JSON object with add and remove."]},
            )
        key = self.session_key(request)
        return Response(subscriptions_uploaded(request, data, device=device, session_key=key))


def fast_pull(request: HttpRequest, session_key: str | None, device: str) -> HttpResponse:
    """SubscriptionsView's GET on the fast path (fastpath)."""
    return json_answer(subscriptions_pulled(request, device=device, session_key=session_key))


def fast_upload(request: HttpRequest, session_key: str | None, device: str) -> HttpResponse:
    """SubscriptionsView's POST on the fast path; a request with no body is the view's."""
    answer = subscriptions_uploaded(
        request, app_json(request), device=device, session_key=session_key
    )
    return json_answer(answer)


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
