"""Signing in and out, choosing one's own password after a one-time one, registering, and an
app's login flow's page (docs/web.md)."""

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login, logout
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import Resolver404, get_script_prefix, resolve, reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST
from rest_framework.exceptions import Throttled
from rest_framework.throttling import BaseThrottle

from accounts import addresses, invitations
from accounts import selectors as account_selectors
from accounts import services as accounts
from accounts.throttles import count_mail_request, count_registration
from core import clock
from core.exceptions import InvalidInput, NotAuthorized, NotFound
from factors import signing as factor_signing
from nextcloud import flows
from web import forms
from web import services as web_services
from web.views.common import (
    GET_POST,
    form_errors,
    link_dead,
    or_404,
    password_form_status,
    return_page,
    signed_in,
    throttled_message,
)

RESUMED = (
    "Welcome back: your account was suspended after a long time unused, and now works again. "
    "Your apps sync again with their app passwords as before."
)


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    return redirect("web:podcasts" if signed_in(request) else "web:login")


def _app_asking(next_page: str) -> str:
    """The name of the app whose login flow's page `next_page` is, while the flow waits for its
    person; "" for any other page, and for a flow unknown, expired or answered."""
    path = urlsplit(next_page).path
    prefix = get_script_prefix()
    if path.startswith(prefix):
        path = "/" + path[len(prefix) :]
    try:
        match = resolve(path)
    except Resolver404:
        return ""
    if match.view_name != "web:login-flow":
        return ""
    try:
        return flows.login_flow_pending(login_token=match.kwargs["token"]).client_name
    except NotFound:
        return ""


@GET_POST
@never_cache
def sign_in(request: HttpRequest) -> HttpResponse:
    """The account's own password signs in here, never an app password; failures count
    against the same throttle as the APIs' logins. On the way to an app's login flow, the page
    names the app that asks. A one-time password staff handed over signs nobody in: its answer
    asks for the person's own password first (password_choose)."""
    if signed_in(request):
        return redirect(return_page(request, reverse("web:podcasts")))
    form = forms.SignInForm(request, data=request.POST if request.method == "POST" else None)
    status = 200
    if request.method == "POST":
        checked = password_form_status(request, form, request.POST.get("username", ""))
        if checked == 200:
            user: Any = form.get_user()
            ticket = account_selectors.one_time_ticket(user=user)
            if ticket is not None:
                choice = forms.PasswordChoiceForm(
                    initial={"ticket": ticket, "username": user.get_username()}
                )
                return _password_choice(request, choice)
            next_page = return_page(request, "")
            if not factor_signing.sign_in(request, user, next_page=next_page, resumed=form.resumed):
                return redirect("web:login-second")
            if form.resumed:
                messages.success(request, RESUMED)
            return redirect(next_page or reverse("web:podcasts"))
        status = 429 if checked == 429 else 200  # a wrong password is the form shown again
    next_page = return_page(request, "")
    return render(
        request,
        "web/login.html",
        {
            "form": form,
            "next": next_page,
            "app_asking": _app_asking(next_page) if next_page else "",
            "registration": settings.REGISTRATION == "open",
        },
        status=status,
    )


def _password_choice(request: HttpRequest, form: Any, status: int = 200) -> HttpResponse:
    context = {"form": form, "next": return_page(request, "")}
    return render(request, "web/password_choose.html", context, status=status)


@GET_POST
@never_cache
def password_choose(request: HttpRequest) -> HttpResponse:
    """Where the answer to a sign-in with a one-time password posts the person's own password:
    set, then signed in with it, and on to where the sign-in was going. Nothing here but that
    form's answer: a GET goes to the sign-in page."""
    if request.method == "GET":
        return redirect("web:login")
    form = forms.PasswordChoiceForm(request.POST)
    if form.is_valid():
        try:
            user: Any = accounts.password_choose(
                ticket=form.cleaned_data["ticket"], password=form.cleaned_data["password"]
            )
        except InvalidInput as exc:  # the password refused
            form_errors(form, exc)
        except NotAuthorized as exc:  # the ticket stale, or the account turned off since
            form.add_error(None, f"{exc.message}.")
        else:
            messages.success(request, "Your password is set: sign in with it from now on.")
            next_page = return_page(request, "")
            if not factor_signing.sign_in(request, user, next_page=next_page):
                return redirect("web:login-second")
            return redirect(next_page or reverse("web:podcasts"))
    return _password_choice(request, form, status=400)


@GET_POST
def admin_sign_in(request: HttpRequest) -> HttpResponse:
    """The admin's sign-in page is this site's: one form, one throttle and one lockout for every
    surface, and never an app password. Staff come back to where the admin sent them."""
    next_page = return_page(request, reverse("admin:index"))
    if not signed_in(request):
        return redirect_to_login(next_page)
    if not request.user.is_staff:
        raise PermissionDenied("This account is not staff: the admin is for staff only.")
    return redirect(next_page)


@require_POST
def sign_out(request: HttpRequest) -> HttpResponse:
    logout(request)
    messages.info(request, "You are signed out.")
    return redirect("web:login")


def _closed(request: HttpRequest) -> HttpResponse:
    """Registration is not open: a 404 that says so, and who gives accounts instead; it names
    nobody."""
    context = {"by_invitation": invitations.invitations_open()}
    return render(request, "web/register_closed.html", context, status=404)


@GET_POST
@never_cache
def register(request: HttpRequest) -> HttpResponse:
    """Self-registration, when REGISTRATION is open: a new account, signed in at once."""
    if settings.REGISTRATION != "open":
        return _closed(request)
    return _registration(request, lambda form: accounts.user_register(**_chosen(form)))


@GET_POST
@never_cache
def register_invited(request: HttpRequest, token: str) -> HttpResponse:
    """The page an invitation link opens, when REGISTRATION is by invitation: the same form,
    whose account uses the invitation up. A link that does not work says so (a 404)."""
    try:
        invitation = invitations.invitation_read(token=token)
    except NotFound as exc:
        return link_dead(request, exc, mailed=False)
    return _registration(
        request,
        lambda form: invitations.user_register_invited(token=token, **_chosen(form)),
        invited_by=invitation.made_by.get_username(),
    )


def _chosen(form: Any) -> dict[str, str]:
    return {"username": form.cleaned_data["username"], "password": form.cleaned_data["password"]}


def _registration(
    request: HttpRequest, make: Callable[[Any], Any], invited_by: str = ""
) -> HttpResponse:
    """The registration form; `make` makes the account from the valid form. Throttled per
    client address (THROTTLE_REGISTRATION_RATE); the new account is signed in at once."""
    form = forms.RegistrationForm(request.POST if request.method == "POST" else None)
    status = 200
    if request.method == "POST" and form.is_valid():
        try:
            address = addresses.address_checked(form.cleaned_data.get("address", ""))
            count_registration(request)
            if address:
                count_mail_request(request, address)
            user: Any = web_services.account_register(make=lambda: make(form), address=address)
        except Throttled as exc:
            form.add_error(None, throttled_message(exc))
            status = 429
        except InvalidInput as exc:
            form_errors(form, exc)
        except NotFound as exc:  # the invitation used meanwhile, in another tab
            form.add_error(None, f"{exc.message}.")
            status = 404
        else:
            if address:  # off until the address is confirmed
                context = {"address": address, "days": settings.EMAIL_CONFIRM_TIMEOUT // 86400}
                return render(request, "web/register_confirm.html", context)
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            messages.success(request, "Welcome! Your account is ready.")
            return redirect("web:podcasts")
    context = {"form": form, "invited_by": invited_by}
    return render(request, "web/register.html", context, status=status)


@GET_POST
@never_cache
def login_flow(request: HttpRequest, token: str) -> HttpResponse:
    """The page an app logging in with Nextcloud's Login Flow v2 opens (docs/nextcloud.md,
    "Logging in"): the person signs in as on any page, then allows the app to sync with their
    account, or denies it. A flow that is unknown, expired or answered already is a 404."""
    flow = or_404(lambda: flows.login_flow_pending(login_token=token))
    if not signed_in(request):
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
                or_404(lambda: flows.login_flow_grant(login_token=token, user=request.user))
            except InvalidInput as exc:  # no room for another app password
                context["error"] = f"{exc.message}."
                status = 400
            else:
                context["answer"] = "allowed"
        elif decision == "deny":
            or_404(lambda: flows.login_flow_deny(login_token=token))
            context["answer"] = "denied"
        else:
            context["error"] = "Choose Allow or Deny."
            status = 400
    return render(request, "web/login_flow.html", context, status=status)
