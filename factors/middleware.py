"""Which factor verified a browser's session (django-otp's `user.is_verified()`), read only when
asked; and, where STAFF_REQUIRE_TWO_FACTORS says so, staff without one held to their Account
page, where they add a factor, and the way out (docs/factors.md, "Staff")."""

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import Resolver404, resolve
from django.utils.functional import SimpleLazyObject
from django_otp import DEVICE_ID_SESSION_KEY
from django_otp.models import Device

from accounts.sessions import BROWSER, surface_of
from factors import signing

# The views an unverified staff member may still reach: the Account page, the factors' own,
# and signing out.
STAFF_UNVERIFIED_VIEWS = frozenset({"web:account", "web:logout"})
FACTOR_VIEW_PREFIX = "web:factor"
PASSKEY_NAMESPACE = "otp_webauthn"
STAFF_HELD = (
    "Staff sign in with a second factor here: add a passkey or an authenticator app below, "
    "then sign out and in again with it."
)


def _with_factor(request: HttpRequest, user: Any) -> Any:
    """`user` with django-otp's otp_device and is_verified(), the device read on the first ask."""

    def is_verified() -> bool:
        if not hasattr(user, "otp_device"):
            user.otp_device = _session_device(request, user)
        return user.otp_device is not None

    user.is_verified = is_verified
    return user


def _session_device(request: HttpRequest, user: Any) -> Device | None:
    """The factor this session was verified by, while it is still the account's and confirmed
    (a factor removed since verifies nothing)."""
    device_id = request.session.get(DEVICE_ID_SESSION_KEY) if user.is_authenticated else None
    if not device_id:
        return None
    device = Device.from_persistent_id(device_id)
    if device is None or device.user_id != user.pk or not device.confirmed:
        request.session.pop(DEVICE_ID_SESSION_KEY, None)
        return None
    return device


def _staff_may_reach(request: HttpRequest) -> bool:
    try:
        match = resolve(request.path_info)
    except Resolver404:
        return False
    return (
        match.view_name in STAFF_UNVERIFIED_VIEWS
        or match.view_name.startswith(FACTOR_VIEW_PREFIX)
        or match.namespace == PASSKEY_NAMESPACE
    )


class FactorsMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if hasattr(request, "user") and surface_of(request.path_info) == BROWSER:
            signed = request.user
            request.user = SimpleLazyObject(lambda: _with_factor(request, signed))  # type: ignore[assignment]
            if (
                settings.STAFF_REQUIRE_TWO_FACTORS
                and request.user.is_authenticated
                and request.user.is_staff
                and not signing.verified(request)
                and not _staff_may_reach(request)
            ):
                messages.warning(request, STAFF_HELD)
                return redirect("web:account")
        return self.get_response(request)
