"""The account holders' pages (docs/web.md). Each view checks its form, calls one service or
selector of the app that owns the data, and renders; a domain error becomes a message on the page,
and another person's object is a 404, exactly like one that does not exist."""

import math
import uuid
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login, logout, update_session_auth_hash
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from rest_framework.exceptions import Throttled
from rest_framework.throttling import BaseThrottle

from accounts import selectors as account_selectors
from accounts import services as accounts
from accounts.throttles import count_login_attempt, count_registration, refuse_while_throttled
from core import clock
from core.exceptions import DomainError, Gone, InvalidInput, NotAuthorized, NotFound
from deletions import selectors as deletion_selectors
from deletions import services as deletions
from gpodder import services as gpodder
from nextcloud import flows
from subscriptions import opml
from subscriptions.services import SubscriptionUpdate, subscription_update
from web import forms, selectors, services

GET_POST = require_http_methods(["GET", "POST"])


def _signed_in(request: HttpRequest) -> bool:
    """Signed in on these pages: only a session signed in on them or the admin is someone here
    (accounts.sessions), never one an app made with Basic on its API."""
    return bool(request.user.is_authenticated)


def _person(request: HttpRequest) -> Any:
    """The signed-in person (person_required made sure there is one)."""
    return request.user


def person_required(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    """Django's login_required, but for a person signed in on these pages."""

    @wraps(view)
    def checked(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not _signed_in(request):
            return redirect_to_login(request.get_full_path())
        try:
            return view(request, *args, **kwargs)
        except NotAuthorized:  # the account was deactivated or deleted during this request
            logout(request)
            return redirect_to_login(request.get_full_path())

    return checked


def _found(read: Callable[[], Any]) -> Any:
    """`read()`, with the owning app's NotFound as the page's 404."""
    try:
        return read()
    except NotFound as exc:
        raise Http404 from exc


def _throttled_message(exc: Throttled) -> str:
    wait = math.ceil(getattr(exc, "wait", None) or 1)
    return f"{exc.detail} Try again in {wait} seconds."


def _password_form_status(
    request: HttpRequest, form: Any, username: str, *, password_field: str | None = None
) -> int:
    """Validate a form that checks an account's password as a sign-in does (accounts.throttles):
    refused while `username` is locked out, from here or any other surface, and a wrong
    password counted (only an error on `password_field`, when the form has other fields). 200
    when the form is valid, else the status to answer: 429 or 400."""
    try:
        refuse_while_throttled(request, username)
    except Throttled as exc:
        form.is_valid()  # so the form is bound and shows its fields
        form.errors.clear()
        form.add_error(None, _throttled_message(exc))
        return 429
    if form.is_valid():
        return 200
    if username and (password_field is None or form.has_error(password_field)):
        count_login_attempt(request, username)
    return 400


def _next_page(request: HttpRequest, default: str) -> str:
    """Where a form asked to go back to, if it is a page of this site."""
    wanted = request.POST.get("next") or request.GET.get("next") or ""
    allowed = url_has_allowed_host_and_scheme(
        wanted, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return wanted if allowed else default


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    return redirect("web:podcasts" if _signed_in(request) else "web:login")


# --- Signing in and out, registering ---------------------------------------------------------


@GET_POST
@never_cache
def sign_in(request: HttpRequest) -> HttpResponse:
    """The account's own password signs in here, never an app password; failures count
    against the same throttle as the APIs' logins."""
    if _signed_in(request):
        return redirect(_next_page(request, reverse("web:podcasts")))
    form = forms.SignInForm(request, data=request.POST if request.method == "POST" else None)
    status = 200
    if request.method == "POST":
        checked = _password_form_status(request, form, request.POST.get("username", ""))
        if checked == 200:
            login(request, form.get_user())
            return redirect(_next_page(request, reverse("web:podcasts")))
        status = 429 if checked == 429 else 200  # a wrong password is the form shown again
    return render(
        request,
        "web/login.html",
        {"form": form, "next": _next_page(request, ""), "registration": settings.REGISTRATION_OPEN},
        status=status,
    )


@GET_POST
def admin_sign_in(request: HttpRequest) -> HttpResponse:
    """The admin's sign-in page is this site's: one form, one throttle and one lockout for every
    surface, and never an app password. Staff come back to where the admin sent them."""
    next_page = _next_page(request, reverse("admin:index"))
    if not _signed_in(request):
        return redirect_to_login(next_page)
    if not request.user.is_staff:
        raise PermissionDenied("This account is not staff: the admin is for staff only.")
    return redirect(next_page)


@require_POST
def sign_out(request: HttpRequest) -> HttpResponse:
    logout(request)
    messages.info(request, "You are signed out.")
    return redirect("web:login")


@GET_POST
@never_cache
def register(request: HttpRequest) -> HttpResponse:
    """Self-registration, when REGISTRATION_OPEN: a new account, signed in at once."""
    if not settings.REGISTRATION_OPEN:
        raise Http404
    form = forms.RegistrationForm(request.POST if request.method == "POST" else None)
    status = 200
    if request.method == "POST" and form.is_valid():
        try:
            count_registration(request)
            user: Any = accounts.user_register(
                username=form.cleaned_data["username"], password=form.cleaned_data["password"]
            )
        except Throttled as exc:
            form.add_error(None, _throttled_message(exc))
            status = 429
        except InvalidInput as exc:
            _form_errors(form, exc)
        else:
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            messages.success(request, "Welcome! Your account is ready.")
            return redirect("web:podcasts")
    return render(request, "web/register.html", {"form": form}, status=status)


def _form_errors(form: Any, exc: DomainError) -> None:
    """A service's InvalidInput on the form: on each field it names, else on the whole form."""
    errors = getattr(exc, "errors", None) or {}
    placed = False
    for name, problems in errors.items():
        if name in form.fields:
            for problem in problems if isinstance(problems, list) else [problems]:
                form.add_error(name, str(problem))
                placed = True
    if not placed:
        form.add_error(None, exc.message)


# --- Podcasts -------------------------------------------------------------------------------


@require_GET
@person_required
def podcasts(request: HttpRequest) -> HttpResponse:
    search = forms.PodcastSearchForm(request.GET)
    valid = search.is_valid()
    query = search.cleaned_data.get("q", "") if valid else ""
    status = search.cleaned_data.get("status", "") if valid else ""
    page = selectors.podcasts_page(
        user=request.user, query=query, status=status, page=request.GET.get("page")
    )
    return render(
        request,
        "web/podcasts.html",
        {"search": search, "page": page, "query": query, "status": status},
    )


@require_GET
@person_required
def podcast(request: HttpRequest, guid: uuid.UUID) -> HttpResponse:
    detail = _found(lambda: selectors.podcast_detail(user=request.user, guid=guid))
    return render(request, "web/podcast.html", {"detail": detail, "sub": detail.subscription})


@require_POST
@person_required
def podcast_subscription(request: HttpRequest, guid: uuid.UUID) -> HttpResponse:
    """Unsubscribe, or subscribe again: what a PATCH of is_subscribed does."""
    form = forms.SubscriptionForm(request.POST)
    form.is_valid()
    subscribe = bool(form.cleaned_data.get("subscribe"))
    try:
        sub = _found(
            lambda: subscription_update(
                user=request.user, guid=guid, change=SubscriptionUpdate(is_subscribed=subscribe)
            )
        )
    except Gone:
        messages.error(request, "This subscription has been deleted: add its feed again instead.")
    else:
        told = "Subscribed again to" if subscribe else "Unsubscribed from"
        messages.success(request, f"{told} {sub.feed_url}.")
    return redirect(_next_page(request, reverse("web:podcast", args=[guid])))


@require_POST
@person_required
def podcast_delete(request: HttpRequest, guid: uuid.UUID) -> HttpResponse:
    """Delete the subscription through the deletion flow, then show the deletion's status."""
    try:
        deletion = _found(lambda: deletions.deletion_request(user=request.user, guid=guid))
    except Gone:
        messages.info(request, "This subscription is deleted already.")
        return redirect("web:podcast", guid=guid)
    return redirect("web:deletion", deletion_id=deletion.pk)


@require_GET
@person_required
def deletion(request: HttpRequest, deletion_id: int) -> HttpResponse:
    found = _found(
        lambda: deletion_selectors.deletion_get(user=request.user, deletion_id=deletion_id)
    )
    return render(request, "web/deletion.html", {"deletion": found})


# --- Devices --------------------------------------------------------------------------------


@require_GET
@person_required
def devices(request: HttpRequest) -> HttpResponse:
    page = selectors.devices_page(user=request.user, page=request.GET.get("page"))
    return render(request, "web/devices.html", {"page": page})


@GET_POST
@person_required
def device(request: HttpRequest, device_id: str) -> HttpResponse:
    """A device's page: rename it, or change its type."""
    found = _found(lambda: selectors.device_of(user=request.user, device_id=device_id))
    initial = {"caption": found.caption, "type": found.type}
    form = forms.DeviceForm(request.POST if request.method == "POST" else None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            gpodder.device_update(
                user=request.user,
                device_id=found.device_id,
                caption=form.cleaned_data["caption"],
                type=form.cleaned_data["type"],
            )
        except InvalidInput as exc:  # removed meanwhile, and no room to make it again
            _form_errors(form, exc)
        else:
            messages.success(request, f"Device {found.device_id} saved.")
            return redirect("web:devices")
    return render(request, "web/device.html", {"device": found, "form": form})


@require_POST
@person_required
def device_remove(request: HttpRequest, device_id: str) -> HttpResponse:
    _found(lambda: gpodder.device_remove(user=request.user, device_id=device_id))
    messages.success(
        request, f"Device {device_id} removed. If its app syncs again, it comes back as new."
    )
    return redirect("web:devices")


# --- Listening history ----------------------------------------------------------------------


@require_GET
@person_required
def history(request: HttpRequest) -> HttpResponse:
    return render(request, "web/history.html", {"podcasts": selectors.history(user=request.user)})


# --- Your data ------------------------------------------------------------------------------


@require_GET
@person_required
def data(request: HttpRequest) -> HttpResponse:
    return render(request, "web/data.html", {"form": forms.OpmlUploadForm()})


@require_POST
@person_required
def opml_import(request: HttpRequest) -> HttpResponse:
    form = forms.OpmlUploadForm(request.POST, request.FILES)
    summary = None
    status = 200
    if form.is_valid():
        try:
            summary = services.opml_import(
                user=request.user, document=form.cleaned_data["file"].read()
            )
        except InvalidInput as exc:
            form.add_error("file", f"This file could not be read: {exc.message}.")
    if not form.is_valid() or summary is None:
        status = 400
    return render(request, "web/data.html", {"form": form, "summary": summary}, status=status)


@require_GET
@person_required
def opml_export(request: HttpRequest) -> HttpResponse:
    body = opml.opml_render(
        feeds=selectors.opml_feeds(user=request.user),
        created=clock.now(),
        owner=request.user.get_username(),
    )
    response = HttpResponse(body, content_type=opml.CONTENT_TYPE)
    response["Content-Disposition"] = 'attachment; filename="subscriptions.opml"'
    return response


@require_GET
@person_required
def everything(request: HttpRequest) -> StreamingHttpResponse:
    response = StreamingHttpResponse(
        selectors.everything(user=_person(request)), content_type="application/json"
    )
    response["Content-Disposition"] = 'attachment; filename="podcast-sync-data.json"'
    return response


# --- Account --------------------------------------------------------------------------------


def _account_page(
    request: HttpRequest,
    *,
    password_form: Any = None,
    app_form: Any = None,
    created: tuple[Any, str] | None = None,
    status: int = 200,
) -> HttpResponse:
    return render(
        request,
        "web/account.html",
        {
            "password_form": password_form or forms.PasswordChange(_person(request)),
            "app_form": app_form or forms.AppPasswordForm(),
            "app_passwords": account_selectors.app_passwords_of(user=request.user),
            "created": created,
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
    form = forms.PasswordChange(_person(request), request.POST)
    status = _password_form_status(
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
def app_password_create(request: HttpRequest) -> HttpResponse:
    """Shown once, on this answer only: it is stored hashed and cannot be shown again."""
    form = forms.AppPasswordForm(request.POST)
    if form.is_valid():
        try:
            created = accounts.app_password_create(
                user=request.user, name=form.cleaned_data["name"]
            )
        except InvalidInput as exc:
            _form_errors(form, exc)
        else:
            return _account_page(request, created=created)
    return _account_page(request, app_form=form, status=400)


@require_POST
@person_required
def app_password_revoke(request: HttpRequest, app_password_id: int) -> HttpResponse:
    _found(lambda: accounts.app_password_revoke(user=request.user, app_password_id=app_password_id))
    messages.success(request, "The app password is revoked: that app is signed out everywhere.")
    return redirect("web:account")


@GET_POST
@person_required
@never_cache
def account_delete(request: HttpRequest) -> HttpResponse:
    """Delete the account and everything of it, once the password is given again."""
    user = request.user
    form = forms.PasswordConfirmForm(request.POST if request.method == "POST" else None, user=user)
    status = 200
    if request.method == "POST":
        status = _password_form_status(request, form, user.get_username())
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
    found = _found(lambda: deletion_selectors.account_deletion_by_key(key=key))
    return render(request, "web/account_deletion.html", {"deletion": found})


# --- Apps logging in (Nextcloud's Login Flow v2) --------------------------------------------


@GET_POST
@never_cache
def login_flow(request: HttpRequest, token: str) -> HttpResponse:
    """The page an app logging in with Nextcloud's Login Flow v2 opens (docs/nextcloud.md,
    "Logging in"): the person signs in as on any page, then allows the app to sync with their
    account, or denies it. A flow that is unknown, expired or answered already is a 404."""
    flow = _found(lambda: flows.login_flow_pending(login_token=token))
    if not _signed_in(request):
        return redirect_to_login(request.get_full_path())
    # Where this browser is, beside where the flow was started: an app on the same phone or
    # network usually shares its address, and a link someone else started usually does not.
    here = flows.address_of(BaseThrottle().get_ident(request))  # type: ignore[arg-type]
    context: dict[str, Any] = {"flow": flow, "token": token, "here": here, "now": clock.now()}
    status = 200
    if request.method == "POST":
        decision = request.POST.get("decision")
        if decision == "allow":
            try:
                _found(lambda: flows.login_flow_grant(login_token=token, user=request.user))
            except InvalidInput as exc:  # no room for another app password
                context["error"] = f"{exc.message}."
                status = 400
            else:
                context["answer"] = "allowed"
        elif decision == "deny":
            _found(lambda: flows.login_flow_deny(login_token=token))
            context["answer"] = "denied"
        else:
            context["error"] = "Choose Allow or Deny."
            status = 400
    return render(request, "web/login_flow.html", context, status=status)
