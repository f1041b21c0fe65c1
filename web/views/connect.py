"""Connecting an app: the server's address and each app's steps, with an app password made for
the app on the spot (docs/web.md, "Connecting an app")."""

from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache

from api.addresses import address_of_request
from core.exceptions import InvalidInput
from web import forms, services
from web.views.common import GET_POST, person_of, person_required

# What AntennaPod's gpodder.net login refuses in a username (GpodderAuthenticationFragment's
# usernameHasUnwantedChars); its Nextcloud login takes any username.
ANTENNAPOD_REFUSES = frozenset("!@#$%&*()+=|<>?{}[]~")


def _page(
    request: HttpRequest, *, form: Any = None, made: Any = None, status: int = 200
) -> HttpResponse:
    # One a phone reaches; PUBLIC_URL, when set, is also the one the Nextcloud login gives apps.
    address = address_of_request(request)
    server = address.address
    username = person_of(request).get_username()
    app = form.data.get("app", "") if form is not None else ""
    return render(
        request,
        "web/connect.html",
        {
            "server": server,
            "address": address,
            "plain_http": server.startswith("http://"),
            "username": username,
            "antennapod_refuses": "".join(sorted(ANTENNAPOD_REFUSES.intersection(username))),
            # The app whose button was pressed, when it is one of the page's: its password or
            # its error is shown in its own section.
            "app": app if app in forms.CONNECT_APPS else "",
            "form": form,
            "made": made,
            "max_app_passwords": settings.MAX_APP_PASSWORDS,
        },
        status=status,
    )


@GET_POST
@person_required
@never_cache
def connect(request: HttpRequest) -> HttpResponse:
    """A POST makes an app password for the app it names, shown once, on this answer only."""
    if request.method == "GET":
        return _page(request)
    form = forms.ConnectAppForm(request.POST)
    if not form.is_valid():
        return _page(request, form=form, status=400)
    try:
        made = services.app_password_for_app(
            user=request.user, app=forms.CONNECT_APPS[form.cleaned_data["app"]]
        )
    except InvalidInput as exc:  # MAX_APP_PASSWORDS reached
        form.add_error(None, f"{exc.message}.")
        return _page(request, form=form, status=400)
    return _page(request, form=form, made=made)
