"""The sign-in's second step, and the Account page's second factors: authenticator apps,
passkeys and recovery codes (docs/factors.md). The factors app keeps them; these views ask
the password again before a change, and change nothing for a session that has factors to
verify it and was not verified by one."""

import base64
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from accounts.throttles import count_login_attempt
from core.exceptions import InvalidInput, NotFound
from factors import selectors, services, signing
from web import forms
from web.views.common import (
    GET_POST,
    form_errors,
    password_form_status,
    person_of,
    person_required,
)
from web.views.signing import RESUMED

STEP_OVER = (
    "The second step of that sign-in waited too long, or the account changed: sign in again."
)
View = Callable[[HttpRequest], HttpResponseBase]
UNVERIFIED = (
    "This browser was signed in before your account had a second factor: sign out, and sign "
    "in again with one, to change them."
)


def _done_signing_in(request: HttpRequest, held: dict[str, Any]) -> HttpResponse:
    if held.get("resumed"):
        messages.success(request, RESUMED)
    return redirect(held.get("next") or reverse("web:podcasts"))


@GET_POST
@never_cache
def second_step(request: HttpRequest) -> HttpResponse:
    """After the password of an account with a second factor: a code from its app or one of
    its recovery codes, or its passkey (the passkey's scripts post to factors.urls). Wrong codes
    count against the same throttle as wrong passwords, for the account."""
    waiting = signing.pending(request)
    if waiting is None:
        messages.info(request, STEP_OVER)
        return redirect("web:login")
    user = waiting[0]
    form = forms.SecondStepForm(request.POST if request.method == "POST" else None)
    status = 200
    if request.method == "POST":
        checked = password_form_status(request, form, user.get_username())
        if checked == 200:
            device = services.second_factor_check(user=user, code=form.cleaned_data["code"])
            if device is not None:
                return _done_signing_in(request, signing.sign_in_finish(request, user, device))
            count_login_attempt(request, user.get_username())
            form.add_error("code", "That code does not work: type the one your app shows now.")
            checked = 400
        status = checked
    factors = selectors.factors_of(user=user)
    context = {"form": form, "factors": factors}
    return render(request, "web/login_second.html", context, status=status)


def _back(request: HttpRequest, error: str = "") -> HttpResponse:
    """To the Account page's factors, with `error` said there."""
    if error:
        messages.error(request, error)
    return redirect(reverse("web:account") + "#factors")


def factor_change(*, password: bool) -> Callable[[View], View]:
    """A change of the signed-in person's factors: a POST, by a session that may change them
    (factors.signing.factors_changeable), with the account's password given again when
    `password`, checked and counted as a sign-in's."""

    def decorate(view: View) -> View:
        @require_POST
        @person_required
        @never_cache
        @wraps(view)
        def checked(request: HttpRequest) -> HttpResponseBase:
            if not signing.factors_changeable(request):
                return _back(request, UNVERIFIED)
            if password:
                user = person_of(request)
                form = forms.PasswordConfirmForm(request.POST, user=user)
                status = password_form_status(
                    request, form, user.get_username(), password_field="password"
                )
                if status != 200:
                    problems = form.errors.get("password", []) + form.non_field_errors()
                    return _back(request, " ".join(str(problem) for problem in problems))
            return view(request)

        return checked

    return decorate


def _app_page(request: HttpRequest, device: Any, form: Any, status: int = 200) -> HttpResponse:
    context = {
        "form": form,
        "qr": services.app_qr(device),
        "key": base64.b32encode(device.bin_key).decode(),
    }
    return render(request, "web/factor_app.html", context, status=status)


@factor_change(password=True)
def factor_app_add(request: HttpRequest) -> HttpResponse:
    """An authenticator app's key, shown as a QR code and as text."""
    device = services.app_begin(user=person_of(request))
    return _app_page(request, device, forms.AppConfirmForm(initial={"device": device.pk}))


@factor_change(password=False)
def factor_app_confirm(request: HttpRequest) -> HttpResponse:
    """The app's first code: the app is the account's, and this session verified by it."""
    user = person_of(request)
    form = forms.AppConfirmForm(request.POST)
    if not form.is_valid():
        return _back(request, "That set-up is over: start again.")
    try:
        device = services.app_pending(user=user, device_id=form.cleaned_data["device"])
        codes = services.app_confirm(user=user, device_id=device.pk, code=form.cleaned_data["code"])
    except NotFound as exc:
        return _back(request, f"{exc.message}.")
    except InvalidInput as exc:
        form_errors(form, exc)
        return _app_page(request, device, form, status=400)
    device.refresh_from_db()
    signing.session_verified(request, device)
    messages.success(request, "The authenticator app is added: sign-ins ask for its code.")
    return _codes_page(request, codes)


def _codes_page(request: HttpRequest, codes: list[str]) -> HttpResponse:
    if not codes:
        return _back(request)
    return render(request, "web/factor_codes.html", {"codes": codes})


@factor_change(password=True)
def factor_remove(request: HttpRequest) -> HttpResponse:
    """One passkey or app, named `kind:id` by the form's list; with the last, the recovery
    codes go too."""
    kind, _, factor_id = str(request.POST.get("factor", "")).partition(":")
    try:
        if not factor_id.isdigit() or len(factor_id) > 18:
            raise NotFound("Choose one of the factors listed")
        services.factor_remove(user=person_of(request), kind=kind, factor_id=int(factor_id))
    except NotFound as exc:
        return _back(request, f"{exc.message}.")
    messages.success(request, "The factor is removed.")
    return _back(request)


@factor_change(password=True)
def recovery_codes_new(request: HttpRequest) -> HttpResponse:
    """New recovery codes in place of the old, for an account with a factor."""
    user = person_of(request)
    if not selectors.has_factors(user=user):
        return _back(request, "Recovery codes stand in for a passkey or an app: add one first.")
    return _codes_page(request, services.recovery_codes_new(user=user))
