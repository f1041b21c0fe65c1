"""Signing in and out, registering, changing the password, and what guards every form: CSRF,
the cookies' flags under HTTPS, the login throttle."""

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from accounts.throttles import LoginThrottle, RegistrationThrottle
from tests.factories import UserFactory
from tests.web.helpers import PASSWORD


def test_sign_in_with_the_password_then_out(client: Client, person: Any) -> None:
    response = client.post(
        "/login/", {"username": "alice", "password": PASSWORD, "next": "/history/"}
    )
    assert response.status_code == 302
    assert response["Location"] == "/history/"
    assert client.get("/podcasts/").status_code == 200
    assert client.post("/logout/")["Location"] == "/login/"
    assert client.get("/podcasts/").status_code == 302


def test_signing_out_takes_a_post(page: Client) -> None:
    assert page.get("/logout/").status_code == 405
    assert page.get("/podcasts/").status_code == 200


def test_a_wrong_password_is_told_without_saying_which_part(client: Client, person: Any) -> None:
    for username in ("alice", "nobody"):
        response = client.post("/login/", {"username": username, "password": "wrong"})
        assert response.status_code == 200
        assert "Wrong username or password." in response.content.decode()


def test_an_inactive_account_cannot_sign_in(client: Client, person: Any) -> None:
    get_user_model().objects.filter(pk=person.pk).update(is_active=False)
    response = client.post("/login/", {"username": "alice", "password": PASSWORD})
    assert response.status_code == 200
    assert client.get("/podcasts/").status_code == 302


def test_sign_in_is_throttled_like_the_api_login(
    client: Client, person: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(LoginThrottle, "THROTTLE_RATES", {"user": "1000/min", "login": "3/min"})
    for _ in range(3):
        client.post("/login/", {"username": "alice", "password": "wrong"})
    response = client.post("/login/", {"username": "alice", "password": PASSWORD})
    assert response.status_code == 429
    body = response.content.decode()
    assert "login attempts per address and username" in body
    assert "Try again in" in body
    assert client.get("/podcasts/").status_code == 302


def test_a_next_elsewhere_is_not_followed(client: Client, person: Any) -> None:
    response = client.post(
        "/login/", {"username": "alice", "password": PASSWORD, "next": "//evil.example/"}
    )
    assert response["Location"] == "/podcasts/"


@pytest.mark.parametrize(
    "data",
    [
        {"username": "alice\x00", "password": PASSWORD},
        {"username": "a" * 10_000, "password": "x" * 10_000},
        {"username": ["a", "b"], "password": PASSWORD},
        {},
    ],
)
def test_hostile_sign_ins_are_refused_plainly(client: Client, person: Any, data: Any) -> None:
    response = client.post("/login/", data)
    assert response.status_code == 200
    assert client.get("/podcasts/").status_code == 302


@pytest.mark.parametrize(
    "body",
    [
        b"username=%ED%B2%80&password=%ED%A0%80",  # lone surrogates, as UTF-8 cannot carry them
        b"username=%FF%FE&password=%00",
        b"username=alice&password=" + b"%F0%9F%8E%A7" * 2000,
        b"%%%%&&&===",
    ],
)
def test_hostile_sign_in_bodies_are_refused_plainly(
    client: Client, person: Any, body: bytes
) -> None:
    response = client.post("/login/", body, content_type="application/x-www-form-urlencoded")
    assert response.status_code == 200
    assert client.get("/podcasts/").status_code == 302


def test_every_form_needs_its_csrf_token(person: Any) -> None:
    browser = Client(enforce_csrf_checks=True)
    assert browser.post("/login/", {"username": "alice", "password": PASSWORD}).status_code == 403
    browser.force_login(person)
    for path in (
        "/logout/",
        "/account/password/",
        "/account/app-passwords/",
        "/data/import/",
        "/account/delete/",
    ):
        assert browser.post(path, {}).status_code == 403, path
    assert browser.get("/podcasts/").status_code == 200  # still signed in


def test_the_cookies_are_secure_httponly_and_samesite_under_https(
    person: Any, settings: Any
) -> None:
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = True
    browser = Client()
    form = browser.get("/login/", secure=True)
    csrf = form.cookies["csrftoken"]
    assert csrf["secure"]
    assert csrf["samesite"] == "Lax"
    response = browser.post("/login/", {"username": "alice", "password": PASSWORD}, secure=True)
    session = response.cookies["sessionid"]
    assert session["secure"]
    assert session["httponly"]
    assert session["samesite"] == "Lax"


def test_registration_is_off_by_default(client: Client, db: None) -> None:
    UserFactory(username="someone-here")
    closed = client.get("/register/")
    assert closed.status_code == 404
    body = closed.content.decode()
    assert "Registration is closed" in body
    assert "Ask the person who runs it for one" in body
    assert "someone-here" not in body
    posted = client.post(
        "/register/",
        {"username": "someone-here", "password": PASSWORD, "password_again": PASSWORD},
    )
    assert posted.status_code == 404
    assert posted.content == closed.content  # a name taken or not: the same answer
    assert not get_user_model().objects.filter(username="new").exists()
    assert get_user_model().objects.count() == 1
    sign_in = client.get("/login/").content.decode()
    assert "Create one" not in sign_in
    assert "/register/" not in sign_in


def test_registration_when_open(client: Client, db: None, settings: Any) -> None:
    settings.REGISTRATION = "open"
    assert "Create one" in client.get("/login/").content.decode()
    weak = client.post(
        "/register/", {"username": "bob", "password": "1234", "password_again": "1234"}
    )
    assert weak.status_code == 200
    assert "too short" in weak.content.decode()
    UserFactory(username="Carol")
    taken = client.post(
        "/register/",
        {"username": "carol", "password": PASSWORD, "password_again": PASSWORD},
    )
    assert "already" in taken.content.decode()
    differ = client.post(
        "/register/", {"username": "bob", "password": PASSWORD, "password_again": PASSWORD + "x"}
    )
    assert "The two passwords differ." in differ.content.decode()
    assert not get_user_model().objects.filter(username="bob").exists()

    made = client.post(
        "/register/", {"username": "bob", "password": PASSWORD, "password_again": PASSWORD}
    )
    assert made["Location"] == "/podcasts/"
    assert client.get("/podcasts/").status_code == 200
    assert get_user_model().objects.get(username="bob").check_password(PASSWORD)


def test_registration_is_throttled(
    client: Client, db: None, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.REGISTRATION = "open"
    monkeypatch.setattr(
        RegistrationThrottle, "THROTTLE_RATES", {"user": "1000/min", "registration": "3/hour"}
    )
    statuses = [
        client.post(
            "/register/",
            {"username": f"u{n}", "password": PASSWORD, "password_again": PASSWORD},
        ).status_code
        for n in range(5)
    ]
    assert statuses == [302, 302, 302, 429, 429]
    assert get_user_model().objects.filter(username__startswith="u").count() == 3


def test_changing_the_password_keeps_this_session_and_ends_the_others(
    person: Any,
) -> None:
    here, there = Client(), Client()
    for browser in (here, there):
        browser.post("/login/", {"username": "alice", "password": PASSWORD})
    wrong = here.post(
        "/account/password/",
        {"old_password": "nope", "new_password1": "x", "new_password2": "x"},
    )
    assert wrong.status_code == 400
    new = "another long passphrase 99"
    done = here.post(
        "/account/password/",
        {"old_password": PASSWORD, "new_password1": new, "new_password2": new},
    )
    assert done.status_code == 302
    assert here.get("/podcasts/").status_code == 200
    assert there.get("/podcasts/").status_code == 302
    person.refresh_from_db()
    assert person.check_password(new)
