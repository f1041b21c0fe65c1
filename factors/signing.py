"""A sign-in on the pages in one step or two (docs/factors.md, "Signing in"): the password
alone signs in an account without a second factor; one with a passkey or an authenticator app
is signed in only once the second step is passed. Until then the browser holds nobody's
session: its session keeps who passed the password, for FACTOR_STEP_SECONDS, and only while
that password stands."""

import time
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model, login
from django.http import HttpRequest
from django.utils.crypto import constant_time_compare
from django_otp import login as otp_login
from django_otp.models import Device

from factors.selectors import has_factors

PENDING_KEY = "_factors_pending"
MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"
# Where the Account page finds the recovery codes a first passkey made, to show them once.
CODES_SHOWN_KEY = "_factors_codes"


def sign_in(request: HttpRequest, user: Any, *, next_page: str = "", resumed: bool = False) -> bool:
    """Sign `user` in on this browser, whose password was just given; or, when the account has a
    second factor, keep the sign-in waiting for it. True when signed in now."""
    if not has_factors(user=user):
        login(request, user, backend=MODEL_BACKEND)
        return True
    request.session.cycle_key()  # a new key for the state of the second step
    request.session[PENDING_KEY] = {
        "user": user.pk,
        "hash": user.get_session_auth_hash(),
        "until": time.time() + settings.FACTOR_STEP_SECONDS,
        "next": next_page,
        "resumed": resumed,
    }
    return False


def pending(request: HttpRequest) -> tuple[Any, dict[str, Any]] | None:
    """The account waiting for its second step on this browser, and what its sign-in carried;
    None when none waits, its time is up, or its password or state changed since."""
    held = request.session.get(PENDING_KEY)
    if not isinstance(held, dict) or held.get("until", 0) < time.time():
        return None
    user = get_user_model().objects.filter(pk=held["user"], is_active=True).first()
    if user is None or not constant_time_compare(held["hash"], user.get_session_auth_hash()):
        return None
    return user, held


def sign_in_finish(request: HttpRequest, user: Any, device: Device) -> dict[str, Any]:
    """The second step passed with `device`: signed in, the session marked as verified by it
    (django-otp), the waiting state gone. What the first step carried (next, resumed)."""
    held = request.session.pop(PENDING_KEY, None) or {}
    login(request, user, backend=MODEL_BACKEND)
    otp_login(request, device)
    return held


def session_verified(request: HttpRequest, device: Device) -> None:
    """A person signed in here verified this session with `device` since."""
    otp_login(request, device)


def verified(request: HttpRequest) -> bool:
    """This browser's session was verified by one of its account's factors (django-otp's
    is_verified, which factors.middleware gives the pages' user)."""
    is_verified = getattr(request.user, "is_verified", None)
    return bool(is_verified and is_verified())


def factors_changeable(request: HttpRequest) -> bool:
    """The signed-in person may add or remove factors here: the account has none yet, or this
    session was verified by one (a browser signed in before the first factor was added, or a
    stolen session cookie, cannot swap them)."""
    return verified(request) or not has_factors(user=request.user)


def sign_in_forget(request: HttpRequest) -> None:
    request.session.pop(PENDING_KEY, None)
