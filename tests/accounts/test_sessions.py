"""Where a session may be used (docs/web.md, "Sessions"): one an app made with Basic on the app
API serves only that API, one a person signed in on the pages serves only the pages and the
admin, and one made with an app password ends, everywhere, once that is revoked."""

import base64
from typing import Any

import pytest
from django.contrib.sessions.models import Session
from django.test import Client

from accounts import services
from gpodder.models import Device
from tests.factories import UserFactory

PASSWORD = "a long and unusual passphrase for sessions"
PAGES = ["/podcasts/", "/devices/", "/history/", "/data/", "/account/", "/data/everything.json"]


def basic(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


@pytest.fixture
def staff(db: None) -> Any:
    return UserFactory(username="root", with_password=PASSWORD, is_staff=True, is_superuser=True)


def app_session(username: str, password: str) -> Client:
    """A client holding the cookie an app's Basic login made (AntennaPod's way)."""
    client = Client()
    answer = client.post(
        f"/api/2/auth/{username}/login.json",
        b"",
        content_type="plain/text",
        HTTP_AUTHORIZATION=basic(username, password),
    )
    assert answer.status_code == 200
    assert "sessionid" in answer.cookies
    return client


def signed_in(username: str) -> Client:
    client = Client()
    answer = client.post("/login/", {"username": username, "password": PASSWORD})
    assert answer.status_code == 302, answer.content[:300]
    return client


@pytest.mark.parametrize("with_app_password", [False, True])
def test_a_session_an_app_made_never_opens_the_admin_or_the_pages(
    staff: Any, with_app_password: bool
) -> None:
    secret = PASSWORD
    if with_app_password:
        _, secret = services.app_password_create(user=staff, name="AntennaPod")
    app = app_session("root", secret)
    assert app.get("/api/2/devices/root.json").status_code == 200  # good for the app API

    assert app.get("/admin/").status_code == 302
    assert app.get("/admin/auth/user/").status_code == 302
    assert app.get(f"/admin/auth/user/{staff.pk}/password/").status_code == 302
    for page in PAGES:
        assert app.get(page).status_code == 302, page
    # Nor does the sign-in page take it as signed in.
    assert app.get("/login/").status_code == 200


def test_a_browser_session_is_nobody_on_the_app_api(staff: Any) -> None:
    """A link followed, or a form posted as text/plain, carries the browser's cookie: neither
    may act on the app API (SameSite=Lax sends the cookie on top-level navigations)."""
    browser = signed_in("root")
    assert browser.get("/admin/").status_code == 200
    assert browser.get("/podcasts/").status_code == 200

    followed = browser.get("/api/2/subscriptions/root/created-by-a-link.json?since=0")
    posted = browser.post(
        "/api/2/subscriptions/root/phone.json",
        '{"add": ["https://example.com/feed"], "remove": []}',
        content_type="text/plain",
    )
    simple = browser.get("/subscriptions/root.json")

    assert [followed.status_code, posted.status_code, simple.status_code] == [401, 401, 401]
    assert followed["WWW-Authenticate"].startswith("Basic")
    assert not Device.objects.exists()
    assert not staff.subscriptions.exists()
    assert browser.get("/podcasts/").status_code == 200  # the browser stays signed in


def test_a_revoked_app_password_ends_its_session_on_its_next_request_anywhere(
    staff: Any,
) -> None:
    made, secret = services.app_password_create(user=staff, name="gPodder")
    app = app_session("root", secret)
    assert Session.objects.count() == 1

    services.app_password_revoke(user=staff, app_password_id=made.pk)

    assert app.get("/admin/").status_code == 302  # a request off the app API ...
    assert not Session.objects.exists()  # ... ended it
    assert app.get("/api/2/devices/root.json").status_code == 401


def test_signing_in_on_the_pages_over_an_app_session_makes_it_a_browser_session(
    staff: Any,
) -> None:
    _, secret = services.app_password_create(user=staff, name="Kasts")
    client = app_session("root", secret)
    answer = client.post("/login/", {"username": "root", "password": PASSWORD})
    assert answer.status_code == 302
    assert client.get("/admin/").status_code == 200
    assert client.get("/api/2/devices/root.json").status_code == 401


def test_basic_over_a_browser_session_makes_an_app_session(staff: Any) -> None:
    """An app (or a person typing into the browser's Basic prompt) signs in on the app API:
    that session is then the app's."""
    client = signed_in("root")
    answer = client.get("/api/2/devices/root.json", HTTP_AUTHORIZATION=basic("root", PASSWORD))
    assert answer.status_code == 200
    assert client.get("/api/2/devices/root.json").status_code == 200
    assert client.get("/admin/").status_code == 302


def test_a_session_without_a_surface_is_nobody_anywhere(staff: Any) -> None:
    """Sessions signed in before sessions carried their surface: signed in again, once."""
    client = signed_in("root")
    session = client.session
    del session["_surface"]
    session.save()
    assert client.get("/admin/").status_code == 302
    assert client.get("/podcasts/").status_code == 302
    assert client.get("/api/2/devices/root.json").status_code == 401


# --- What a red team tried next: the surface is the path Django routes on, and changing surface
# gives the session a new key.


def test_a_script_name_does_not_move_a_request_to_the_other_surface(staff: Any) -> None:
    """gunicorn takes SCRIPT_NAME from a header of a trusted peer: it must not make a page look
    like an app path, nor an app path like a page."""
    _, secret = services.app_password_create(user=staff, name="AntennaPod")
    app = app_session("root", secret)
    assert app.get("/admin/", SCRIPT_NAME="/api/2").status_code == 302
    assert app.get("/data/everything.json", SCRIPT_NAME="/subscriptions").status_code == 302

    other = Client()
    made = other.post(
        "/api/2/auth/root/login.json",
        b"",
        content_type="plain/text",
        HTTP_AUTHORIZATION=basic("root", secret),
        SCRIPT_NAME="/x",
    )
    assert made.status_code == 200
    assert other.get("/admin/").status_code == 302
    assert other.get("/api/2/devices/root.json").status_code == 200

    browser = signed_in("root")
    assert browser.get("/api/2/devices/root.json", SCRIPT_NAME="/x").status_code == 401


def test_a_script_name_of_v1_before_a_page_is_no_500(staff: Any) -> None:
    browser = signed_in("root")
    for path in ("/admin/", "/login/", "/podcasts/"):
        assert browser.get(path, SCRIPT_NAME="/v1").status_code in (200, 302), path


def test_signing_in_over_another_surfaces_session_gives_it_a_new_key(staff: Any) -> None:
    """The app's copy of the cookie (or a planted one) must not become a browser's session."""
    _, secret = services.app_password_create(user=staff, name="gPodder")
    app = app_session("root", secret)
    browser = Client()
    browser.cookies["sessionid"] = app.cookies["sessionid"].value  # the same cookie

    assert browser.post("/login/", {"username": "root", "password": PASSWORD}).status_code == 302

    assert browser.cookies["sessionid"].value != app.cookies["sessionid"].value
    assert browser.get("/admin/").status_code == 200
    assert app.get("/admin/").status_code == 302
    assert app.get("/api/2/devices/root.json").status_code == 401  # its session is gone


def test_basic_over_a_browsers_session_gives_it_a_new_key(staff: Any) -> None:
    browser = signed_in("root")
    app = Client()
    app.cookies["sessionid"] = browser.cookies["sessionid"].value
    answer = app.get("/api/2/devices/root.json", HTTP_AUTHORIZATION=basic("root", PASSWORD))
    assert answer.status_code == 200
    assert app.cookies["sessionid"].value != browser.cookies["sessionid"].value
    assert browser.get("/admin/").status_code == 302
