"""The apps' sync views note what each request did on its device, and a refusal with the
reason its answer gave (gpodder.diagnostics), for the device's page: the mixin the gpodder,
episode and Nextcloud views share."""

from typing import Any, cast

from django.http import HttpRequest
from rest_framework.request import Empty, Request
from rest_framework.response import Response
from rest_framework.views import APIView

from gpodder import diagnostics, services

# The answers of a request refused whole, which its device's page tells of: bad input, a
# conflict to send again, a body too large or of another type, too many requests.
REFUSALS = (400, 409, 413, 415, 429)


Notes = dict[str | None, diagnostics.SyncNote]


def note_sync(
    request: Request | HttpRequest, protocol: str, session_key: str | None, notes: Notes
) -> None:
    """Note what a sync request of its user did: `notes`, device id (None: the device of the
    same app) to what it did; `session_key`: its app session on the gpodder API. The views'
    (SyncNoting) and the fast path's (fastpath)."""
    diagnostics.sync_note_record(
        user_id=cast(int, request.user.pk),
        protocol=protocol,
        agent=request.META.get("HTTP_USER_AGENT", ""),
        session_key=session_key,
        notes=notes,
    )


class SyncNoting(APIView):
    """A view of a sync request: it notes what the request did on its device, and a refusal
    with the reason its answer gave (gpodder.diagnostics), for the device's page."""

    protocol: str = diagnostics.Protocol.GPODDER
    data: str = diagnostics.Data.SUBSCRIPTIONS

    def note(self, request: Request, notes: dict[str | None, diagnostics.SyncNote]) -> None:
        """`notes`: device id (None: the device of the same app) to what it did."""
        note_sync(request, self.protocol, self.session_key(request), notes)

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
