"""What every page's view shares: who is signed in, the 404 of another person's object, the
password forms' throttle, where a form goes back to, a service's error on a form."""

import math
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib.auth import logout
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods
from rest_framework.exceptions import Throttled

from accounts.throttles import count_login_attempt, refuse_while_throttled
from core.exceptions import DomainError, InvalidInput, NotAuthorized, NotFound

GET_POST = require_http_methods(["GET", "POST"])


def signed_in(request: HttpRequest) -> bool:
    """Signed in on these pages: only a session signed in on them or the admin is someone here
    (accounts.sessions), never one an app made with Basic on its API."""
    return bool(request.user.is_authenticated)


def person_of(request: HttpRequest) -> Any:
    """The signed-in person (person_required made sure there is one)."""
    return request.user


def person_required(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    """Django's login_required, but for a person signed in on these pages."""

    @wraps(view)
    def checked(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not signed_in(request):
            return redirect_to_login(request.get_full_path())
        try:
            return view(request, *args, **kwargs)
        except NotAuthorized:  # the account was deactivated or deleted during this request
            logout(request)
            return redirect_to_login(request.get_full_path())

    return checked


def or_404(read: Callable[[], Any]) -> Any:
    """`read()`, with the owning app's NotFound as the page's 404."""
    try:
        return read()
    except NotFound as exc:
        raise Http404 from exc


def throttled_message(exc: Throttled) -> str:
    wait = math.ceil(getattr(exc, "wait", None) or 1)
    return f"{exc.detail} Try again in {wait} seconds."


def password_form_status(
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
        form.add_error(None, throttled_message(exc))
        return 429
    if form.is_valid():
        return 200
    if username and (password_field is None or form.has_error(password_field)):
        count_login_attempt(request, username)
    return 400


def return_page(request: HttpRequest, default: str) -> str:
    """Where a form asked to go back to, if it is a page of this site."""
    wanted = request.POST.get("next") or request.GET.get("next") or ""
    allowed = url_has_allowed_host_and_scheme(
        wanted, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return wanted if allowed else default


def form_errors(form: Any, exc: DomainError) -> None:
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


def link_dead(request: HttpRequest, exc: DomainError, *, mailed: bool = True) -> HttpResponse:
    """The page of a link that does nothing: a mailed one (accounts.addresses) dead (404), or
    its address another account's meanwhile (409); an invitation used or too old (404). It says
    why, and, for a mailed one, how to get another."""
    status = 409 if isinstance(exc, InvalidInput) else 404
    context = {"message": f"{exc.message}.", "mail": mailed and settings.MAIL_ENABLED}
    return render(request, "web/link_dead.html", context, status=status)
