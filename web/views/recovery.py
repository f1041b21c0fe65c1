"""A forgotten password reset by a link mailed to the account's address (docs/public-instance.md,
"Password reset"). Without EMAIL_URL the page says what staff can do instead."""

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import logout
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.debug import sensitive_post_parameters
from rest_framework.exceptions import Throttled

from accounts import addresses
from accounts.throttles import count_mail_request
from core.exceptions import InvalidInput, NotAuthorized
from mail.models import Mail
from mail.services import mail_queue
from web import forms
from web.views.common import GET_POST, form_errors, link_dead, throttled_message


@GET_POST
@never_cache
def password_forgotten(request: HttpRequest) -> HttpResponse:
    """Ask for a reset link. The answer is the same whether an account uses the address or
    not, and takes the same steps: the mail is queued by address, and what it says is found
    when it is sent (mail.compose)."""
    if not settings.MAIL_ENABLED:
        return render(request, "web/reset_unavailable.html")
    form = forms.ResetRequestForm(request.POST if request.method == "POST" else None)
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            try:
                address = addresses.address_checked(form.cleaned_data["address"])
                count_mail_request(request, address)
            except InvalidInput as exc:
                form_errors(form, exc)
            except Throttled as exc:
                form.add_error(None, throttled_message(exc))
                status = 429
            else:
                mail_queue(kind=Mail.Kind.RESET, address=address)
                context = {"address": address, "hours": _hours(settings.PASSWORD_RESET_TIMEOUT)}
                return render(request, "web/reset_sent.html", context)
    return render(request, "web/reset_request.html", {"form": form}, status=status)


def _hours(seconds: int) -> int:
    return max(1, seconds // 3600)


@GET_POST
@never_cache
@sensitive_post_parameters("password", "password_again")
def password_reset(request: HttpRequest, uidb64: str, token: str) -> HttpResponse:
    """The page a reset link opens: a new password, once. It signs nobody in: the person signs
    in with the new password, as every browser and app signed in before must."""
    try:
        user: Any = addresses.reset_link_user(uidb64=uidb64, token=token)
    except NotAuthorized as exc:
        return link_dead(request, exc)
    data = request.POST if request.method == "POST" else None
    form = forms.ResetPasswordForm(data, initial={"username": user.get_username()})
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            try:
                addresses.password_reset_by_link(
                    uidb64=uidb64, token=token, password=form.cleaned_data["password"]
                )
            except InvalidInput as exc:
                form_errors(form, exc)
            except NotAuthorized as exc:  # used meanwhile, in another tab
                return link_dead(request, exc)
            else:
                logout(request)
                messages.success(
                    request,
                    "Your password is changed: sign in with it. Browsers and apps signed in with "
                    "the old one are signed out; app passwords keep working.",
                )
                return redirect("web:login")
    context = {"form": form, "username": user.get_username()}
    return render(request, "web/reset_password.html", context, status=status)
