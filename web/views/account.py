"""A person's account: email address, password, app passwords, deleting the account (docs/web.md,
"Account")."""

import uuid
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import logout, update_session_auth_hash
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST
from rest_framework.exceptions import Throttled

from accounts import addresses, invitations
from accounts import selectors as account_selectors
from accounts import services as accounts
from accounts.throttles import count_mail_request
from api.addresses import address_of_request
from core.exceptions import InvalidInput, NotAuthorized, NotFound
from deletions import selectors as deletion_selectors
from deletions import services as deletions
from factors import selectors as factor_selectors
from factors import signing as factor_signing
from mail.services import confirmation_send
from web import forms, selectors
from web.views.common import (
    GET_POST,
    form_errors,
    link_dead,
    or_404,
    password_form_status,
    person_of,
    person_required,
    signed_in,
    throttled_message,
)


def _account_page(
    request: HttpRequest,
    *,
    password_form: Any = None,
    app_form: Any = None,
    address_form: Any = None,
    created: tuple[Any, str] | None = None,
    invited: tuple[Any, str] | None = None,
    invitation_error: str = "",
    status: int = 200,
) -> HttpResponse:
    user = person_of(request)
    inviting = invitations.may_invite(user)
    return render(
        request,
        "web/account.html",
        {
            "address_form": address_form or forms.AddressForm(user=user),
            "address_confirmed": addresses.address_confirmed(user=user),
            "mail": settings.MAIL_ENABLED,
            "password_form": password_form or forms.PasswordChange(user),
            "app_form": app_form or forms.AppPasswordForm(),
            "app_passwords": account_selectors.app_passwords_of(user=request.user),
            "created": created,
            "inviting": inviting,
            "invitations": invitations.invitations_of(user=user) if inviting else [],
            "invited": invited,
            "invitation_error": invitation_error,
            "invitation_days": settings.INVITATION_DAYS,
            "factors": factor_selectors.factors_of(user=user),
            "passkeys": settings.PASSKEYS,
            "factors_changeable": factor_signing.factors_changeable(request),
            "factors_codes": request.session.pop(factor_signing.CODES_SHOWN_KEY, None),
            "factor_add_form": forms.PasswordConfirmForm(user=user, auto_id="app_%s"),
            "factor_codes_form": forms.PasswordConfirmForm(user=user, auto_id="codes_%s"),
            "factor_remove_form": forms.PasswordConfirmForm(user=user, auto_id="remove_%s"),
        },
        status=status,
    )


@require_GET
@person_required
@never_cache
def account(request: HttpRequest) -> HttpResponse:
    return _account_page(request)


@require_POST
@person_required
@never_cache
def password_change(request: HttpRequest) -> HttpResponse:
    form = forms.PasswordChange(person_of(request), request.POST)
    status = password_form_status(
        request, form, request.user.get_username(), password_field="old_password"
    )
    if status != 200:
        return _account_page(request, password_form=form, status=status)
    accounts.password_set(user=form.user, password=form.cleaned_data["new_password1"])
    update_session_auth_hash(request, form.user)  # this session stays; every other one ends
    messages.success(request, "Your password is changed. Other signed-in browsers are signed out.")
    return redirect("web:account")


@require_POST
@person_required
@never_cache
def address_change(request: HttpRequest) -> HttpResponse:
    """A new address, once the password is given again. With mail, it becomes the account's
    once the link mailed to it is opened (address_confirm); without, it is written as it is,
    unconfirmed. An empty one removes the address."""
    user = person_of(request)
    form = forms.AddressForm(request.POST, user=user)
    status = password_form_status(request, form, user.get_username(), password_field="password")
    if status != 200:
        return _account_page(request, address_form=form, status=status)
    try:
        address = addresses.address_checked(form.cleaned_data["address"])
        if settings.MAIL_ENABLED and address:
            count_mail_request(request, address, f"account:{user.pk}")
            confirmation_send(user=user, address=address)
        else:
            addresses.address_set(user=user, address=address)
    except InvalidInput as exc:
        form_errors(form, exc)
        return _account_page(request, address_form=form, status=400)
    except Throttled as exc:
        form.add_error(None, throttled_message(exc))
        return _account_page(request, address_form=form, status=429)
    if settings.MAIL_ENABLED and address:
        messages.success(
            request,
            f"A link is on its way to {address}: open it to make that your address. "
            "Until then your address stays as it is.",
        )
    elif address:
        messages.success(request, f"Your address is {address}.")
    else:
        messages.success(request, "Your address is removed.")
    return redirect("web:account")


@GET_POST
@never_cache
def address_confirm(request: HttpRequest, token: str) -> HttpResponse:
    """The page a confirmation link opens, signed in or not (the mail may be read on another
    device): GET says what it confirms, and its button's POST confirms it. A link that was used,
    is too old, or was made before the account's address or password changed confirms nothing."""
    try:
        user, address = addresses.confirmation_read(token=token)
        if request.method == "POST":
            addresses.address_confirm(token=token)
    except (NotAuthorized, InvalidInput) as exc:
        return link_dead(request, exc)
    if request.method == "GET":
        context = {"username": user.get_username(), "address": address, "token": token}
        return render(request, "web/address_confirm.html", context)
    if not user.is_active:  # a registration waiting for its address
        messages.success(request, f"{address} is confirmed: your account works, sign in with it.")
        return redirect("web:login")
    messages.success(request, f"{address} is now the address of your account.")
    if signed_in(request) and request.user.pk == user.pk:
        return redirect("web:account")
    return redirect("web:login")


@require_POST
@person_required
@never_cache
def invitation_create(request: HttpRequest) -> HttpResponse:
    """A new invitation link, shown on this answer only: only its digest is kept."""
    try:
        made, token = invitations.invitation_create(user=person_of(request))
    except InvalidInput as exc:
        return _account_page(request, invitation_error=f"{exc.message}.", status=400)
    link = address_of_request(request).address + reverse("web:register-invited", args=[token])
    return _account_page(request, invited=(made, link))


@require_POST
@person_required
@never_cache
def invitation_withdraw(request: HttpRequest, invitation_id: int) -> HttpResponse:
    try:
        invitations.invitation_withdraw(user=person_of(request), invitation_id=invitation_id)
    except NotFound:
        message = "This invitation is not among yours waiting to be used: it was used or withdrawn."
        context = {"title": "Invitation not found", "message": message, "back": "web:account"}
        return render(request, "web/gone.html", context, status=404)
    messages.success(request, "The invitation is withdrawn: its link no longer works.")
    return redirect("web:account")


@require_POST
@person_required
@never_cache
def app_password_create(request: HttpRequest) -> HttpResponse:
    """Shown once, on this answer only: it is stored hashed and cannot be shown again."""
    form = forms.AppPasswordForm(request.POST)
    if form.is_valid():
        try:
            created = accounts.app_password_create(
                user=request.user, name=form.cleaned_data["name"]
            )
        except InvalidInput as exc:
            form_errors(form, exc)
        else:
            return _account_page(request, created=created)
    return _account_page(request, app_form=form, status=400)


@GET_POST
@person_required
@never_cache
def app_password_revoke(request: HttpRequest, app_password_id: int) -> HttpResponse:
    """GET, or a POST not sent from it for an app password an app has used: what revoking it
    does. A POST for one never used, or the confirmation's: revoke it."""
    try:
        found = selectors.app_password_to_revoke(user=request.user, app_password_id=app_password_id)
    except NotFound:
        return _app_password_gone(request)
    confirmed = request.POST.get("confirmed") == "yes"
    in_use = found.app_password.last_used is not None
    if request.method == "GET" or (in_use and not confirmed):
        return render(request, "web/app_password_revoke.html", {"found": found})
    try:
        accounts.app_password_revoke(user=request.user, app_password_id=app_password_id)
    except NotFound:  # revoked meanwhile, in another tab
        return _app_password_gone(request)
    messages.success(
        request,
        f"The app password “{found.app_password.name}” is revoked: its app is signed out "
        "everywhere.",
    )
    return redirect("web:account")


def _app_password_gone(request: HttpRequest) -> HttpResponse:
    """Revoked already; or never this person's (the same answer)."""
    message = "This app password is not among yours: it was revoked already."
    context = {"title": "App password not found", "message": message, "back": "web:account"}
    return render(request, "web/gone.html", context, status=404)


@GET_POST
@person_required
@never_cache
def account_delete(request: HttpRequest) -> HttpResponse:
    """Delete the account and everything of it, once the password is given again."""
    user = request.user
    form = forms.PasswordConfirmForm(request.POST if request.method == "POST" else None, user=user)
    status = 200
    if request.method == "POST":
        status = password_form_status(request, form, user.get_username())
        if status == 200:
            try:
                requested = deletions.account_deletion_request(user=user)
            except InvalidInput as exc:
                form.add_error(None, f"{exc.message}.")
                status = 400
            else:
                logout(request)
                return redirect("web:account-deletion", key=requested.key)
    return render(request, "web/account_delete.html", {"form": form}, status=status)


@require_GET
@never_cache
def account_deletion(request: HttpRequest, key: uuid.UUID) -> HttpResponse:
    """The account deletion's status: reached by its unguessable key, since the account that
    asked for it is signed out, and then gone."""
    found = or_404(lambda: deletion_selectors.account_deletion_by_key(key=key))
    return render(request, "web/account_deletion.html", {"deletion": found})
