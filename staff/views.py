"""The admin's overview and the People page (docs/operations.md, "The admin"), mounted under
/admin/ by staff/urls.py through the admin's own check, so that only staff see them and anyone
else is sent to the admin's sign-in. Of the lists the overview summarises, each staff account
sees the rows of those the admin would open for it (staff.admin.overview_viewer), and the counts
of the rest; the People page lists and changes the accounts for the staff the user admin would
let do the same (staff.admin.people_rights)."""

from typing import Any

from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from rest_framework.exceptions import Throttled

from accounts import services as accounts
from accounts.throttles import count_mail_request
from api.addresses import address_of_request
from core.exceptions import InvalidInput, NotFound
from factors import services as factors
from mail import services as mail
from staff import selectors
from staff.admin import PeopleRights, overview_viewer, people_rights
from staff.forms import MemberAddForm

GET_POST = require_http_methods(["GET", "POST"])


def overview(request: HttpRequest) -> HttpResponse:
    context = {
        **admin.site.each_context(request),
        "title": "Overview",
        "overview": selectors.overview_read(viewer=overview_viewer(request)),
        "active_days": selectors.ACTIVE_DAYS,
        "mail_enabled": settings.MAIL_ENABLED,
    }
    return TemplateResponse(request, "staff/overview.html", context)


def _notice(request: HttpRequest, title: str, message: str, status: int) -> HttpResponse:
    context = {**admin.site.each_context(request), "title": title, "message": message}
    return TemplateResponse(request, "staff/notice.html", context, status=status)


def _not_allowed(request: HttpRequest) -> HttpResponse:
    message = (
        "Adding people and changing their accounts is for staff whom the admin lets manage "
        "users (a superuser may): ask one."
    )
    return _notice(request, "Not for this account", message, 403)


def _gone(request: HttpRequest) -> HttpResponse:
    message = "No account has this id: it was deleted, or never was."
    return _notice(request, "No such account", message, 404)


def _people_page(
    request: HttpRequest,
    rights: PeopleRights,
    *,
    form: Any = None,
    handed: tuple[Any, str] | None = None,
    added: bool = False,
    status: int = 200,
) -> HttpResponse:
    """The list, with the form to add a member; `handed`: the account and the one-time
    password the answer shows, the only time it is shown (`added`: of an account just made)."""
    context = {
        **admin.site.each_context(request),
        "title": "People",
        "rights": rights,
        "people": selectors.people_page(number=request.GET.get("page")),
        "form": form or MemberAddForm(),
        "handed": handed,
        "added": added,
        # The one a phone reaches: a staff member at the server itself opened this through
        # localhost, which on the member's phone means the phone.
        "sign_in": address_of_request(request).address + reverse("web:login"),
        "mail_enabled": settings.MAIL_ENABLED,
        "inactive_days": settings.INACTIVE_ACCOUNT_DAYS,
        "warning_days": settings.INACTIVE_WARNING_DAYS,
    }
    return TemplateResponse(request, "staff/people.html", context, status=status)


@require_GET
def people(request: HttpRequest) -> HttpResponse:
    rights = people_rights(request)
    if not rights.view:
        return _not_allowed(request)
    return _people_page(request, rights)


@require_POST
def person_add(request: HttpRequest) -> HttpResponse:
    rights = people_rights(request)
    if not (rights.view and rights.add):
        return _not_allowed(request)
    form = MemberAddForm(request.POST)
    if form.is_valid():
        try:
            handed = accounts.user_add(username=form.cleaned_data["username"])
        except InvalidInput as exc:
            form.add_error("username", _in_words(exc))
        else:
            return _people_page(request, rights, handed=handed, added=True)
    return _people_page(request, rights, form=form, status=400)


def _refused(request: HttpRequest, message: str) -> HttpResponse:
    messages.error(request, message)
    return redirect("admin-people")


BEING_DELETED = "This account is being deleted, as its person asked: nothing can change it now."


def _not_to_change(
    request: HttpRequest, rights: PeopleRights, user_id: int, question: str | None = None
) -> HttpResponse | None:
    """What a change of account `user_id` answers instead of going ahead, or None when it goes
    ahead: staff who may not change accounts, an account not there or being deleted, and, for a
    change asked first, the `question` template unless this is its confirmation's POST (a form
    posted from anywhere else is asked again)."""
    if not (rights.view and rights.change):
        return _not_allowed(request)
    try:
        person = selectors.person_get(user_id=user_id)
    except NotFound:
        return _gone(request)
    if person.being_deleted:
        return _refused(request, BEING_DELETED)
    if question is None or (request.method == "POST" and request.POST.get("confirmed") == "yes"):
        return None
    context = {**admin.site.each_context(request), "title": "People", "person": person}
    return TemplateResponse(request, question, context)


def _in_words(exc: InvalidInput) -> str:
    """What the service refused, as its errors name it (its message starts with the API's
    words, "Input could not be validated")."""
    said = [problem for problems in (exc.errors or {}).values() for problem in problems]
    return " ".join(said) or exc.message


@GET_POST
def person_password(request: HttpRequest, user_id: int) -> HttpResponse:
    """GET, or a POST not sent from the question: what a new one-time password does. The
    confirmation's POST: the new one-time password, shown on its answer only."""
    rights = people_rights(request)
    answer = _not_to_change(request, rights, user_id, "staff/person_password.html")
    if answer is not None:
        return answer
    try:
        handed = accounts.password_reset(user_id=user_id, acting_user=request.user)
    except InvalidInput as exc:
        return _refused(request, _in_words(exc))
    except NotFound:  # deleted since it was read
        return _gone(request)
    return _people_page(request, rights, handed=handed)


@GET_POST
def person_off(request: HttpRequest, user_id: int) -> HttpResponse:
    """GET, or a POST not sent from the question: what turning the account off does. The
    confirmation's POST: turned off."""
    answer = _not_to_change(request, people_rights(request), user_id, "staff/person_off.html")
    if answer is not None:
        return answer
    try:
        user = accounts.user_turn_off(user_id=user_id, acting_user=request.user)
    except InvalidInput as exc:
        return _refused(request, _in_words(exc))
    except NotFound:
        return _gone(request)
    # Not first in the message: the admin capitalises a message's first letter.
    messages.success(
        request,
        f"The account {user.get_username()} is turned off: signed out everywhere, and no app "
        "of theirs syncs. Everything of theirs is kept.",
    )
    return redirect("admin-people")


@require_POST
def person_on(request: HttpRequest, user_id: int) -> HttpResponse:
    answer = _not_to_change(request, people_rights(request), user_id)
    if answer is not None:
        return answer
    try:
        user = accounts.user_turn_on(user_id=user_id)
    except NotFound:
        return _gone(request)
    messages.success(
        request, f"The account {user.get_username()} is turned on again: they can sign in."
    )
    return redirect("admin-people")


@require_POST
def person_confirmation(request: HttpRequest, user_id: int) -> HttpResponse:
    """Send the account's person, again, a link that confirms the address it has: for one whose
    first mail was lost, or an address staff wrote in the admin."""
    answer = _not_to_change(request, people_rights(request), user_id)
    if answer is not None:
        return answer
    person = selectors.person_get(user_id=user_id)
    if not settings.MAIL_ENABLED:
        return _refused(request, "This server sends no mail: EMAIL_URL is not set.")
    if not person.email or person.email_confirmed:
        return _refused(request, f"{person.username} has no address waiting to be confirmed.")
    try:
        count_mail_request(request, f"account:{person.pk}")
    except Throttled as exc:
        return _refused(request, str(exc.detail))
    mail.confirmation_send(user=get_user_model().objects.get(pk=person.pk), address=person.email)
    messages.success(
        request, f"A link to confirm {person.email} is on its way to it, for {person.username}."
    )
    return redirect("admin-people")


@GET_POST
def person_factors(request: HttpRequest, user_id: int) -> HttpResponse:
    """GET, or a POST not sent from the question: what removing the account's second factors
    does, and to check first that it is its person asking. The confirmation's POST: removed."""
    answer = _not_to_change(request, people_rights(request), user_id, "staff/person_factors.html")
    if answer is not None:
        return answer
    user = get_user_model().objects.get(pk=user_id)
    try:
        removed = factors.factors_remove_all(user=user, acting_user=request.user)
    except InvalidInput as exc:
        return _refused(request, _in_words(exc))
    messages.success(
        request,
        f"The second factors of {user.get_username()} are removed ({removed}), with their "
        "recovery codes: their password alone signs them in, until they add a factor again.",
    )
    return redirect("admin-people")
