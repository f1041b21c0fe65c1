"""A new password, by any route (the account page, the admin, `changepassword`, a reset link),
ends every token and session of the account but the page session that made it (docs/api.md,
"Authentication"); the page's check of the old password counts like a sign-in."""

import base64
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from rest_framework.test import APIClient

from accounts import addresses, services
from accounts.throttles import LoginThrottle
from tests.factories import UserFactory
from tests.helpers import assert_error

PASSWORD = "a long and unusual passphrase for tokens"
NEW = "another long passphrase, changed 42"


@pytest.fixture
def member(db: None) -> Any:
    return UserFactory(username="alice", with_password=PASSWORD)


@pytest.fixture
def staff(db: None) -> Any:
    return UserFactory(username="root", with_password=PASSWORD, is_staff=True, is_superuser=True)


def tokens(username: str, password: str = PASSWORD) -> dict[str, Any]:
    answer = APIClient().post(
        "/v1/auth/login", {"username": username, "password": password}, format="json"
    )
    assert answer.status_code == 200, answer.content
    return dict(answer.json())


def refreshed(refresh_token: str) -> Any:
    return APIClient().post("/v1/auth/refresh", {"refresh_token": refresh_token}, format="json")


def signed_in(username: str) -> Client:
    client = Client()
    assert client.post("/login/", {"username": username, "password": PASSWORD}).status_code == 302
    return client


def on_the_page(member: Any, staff: Any, monkeypatch: pytest.MonkeyPatch) -> Client:
    browser = signed_in("alice")
    answer = browser.post(
        "/account/password/",
        {"old_password": PASSWORD, "new_password1": NEW, "new_password2": NEW},
    )
    assert answer.status_code == 302
    return browser


def in_the_admin(member: Any, staff: Any, monkeypatch: pytest.MonkeyPatch) -> Client:
    admin = signed_in("root")
    answer = admin.post(
        f"/admin/auth/user/{member.pk}/password/",
        {"password1": NEW, "password2": NEW, "usable_password": "true"},
    )
    assert answer.status_code == 302, answer.content[:500]
    return admin


def by_the_command(member: Any, staff: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # The command asks twice on the terminal; the answer is typed here.
    monkeypatch.setattr("getpass.getpass", lambda prompt="": NEW)
    call_command("changepassword", "alice", stdout=None)


def by_a_reset_link(member: Any, staff: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    member.refresh_from_db()  # as it is now: signed in since
    uid, token = addresses.reset_link_parts(member)
    link = f"/login/reset/{uid}/{token}/"
    answer = Client().post(link, {"password": NEW, "password_again": NEW})
    assert answer.status_code == 302, answer.content[:500]


ROUTES: list[Callable[..., Any]] = [on_the_page, in_the_admin, by_the_command, by_a_reset_link]


@pytest.mark.parametrize("change", ROUTES, ids=lambda route: route.__name__)
def test_a_new_password_ends_every_token_and_session_of_before(
    member: Any, staff: Any, monkeypatch: pytest.MonkeyPatch, change: Callable[..., Any]
) -> None:
    by_password = tokens("alice")
    _, secret = services.app_password_create(user=member, name="AntennaPod")
    by_app_password = tokens("alice", secret)
    rotated = refreshed(by_password["refresh_token"]).json()  # a rotation before the change
    other_browser = signed_in("alice")
    app = APIClient()
    assert app.get("/api/2/devices/alice.json", HTTP_AUTHORIZATION=basic(secret)).status_code == 200

    change(member, staff, monkeypatch)
    member.refresh_from_db()
    assert member.check_password(NEW)

    for refresh_token in (rotated["refresh_token"], by_app_password["refresh_token"]):
        assert_error(refreshed(refresh_token), 401)
    for access_token in (rotated["access_token"], by_app_password["access_token"]):
        bearer = APIClient(HTTP_AUTHORIZATION=f"Bearer {access_token}")
        assert_error(bearer.get("/v1/subscriptions"), 401)
    assert other_browser.get("/podcasts/").status_code == 302
    assert_error(app.get("/api/2/devices/alice.json"), 401)  # the app's cookie alone
    # The new password signs in, and so does the app password (it is revoked on its own).
    assert refreshed(tokens("alice", NEW)["refresh_token"]).status_code == 200
    assert refreshed(tokens("alice", secret)["refresh_token"]).status_code == 200


def basic(password: str) -> str:
    return "Basic " + base64.b64encode(f"alice:{password}".encode()).decode()


def test_the_page_that_changed_it_stays_signed_in(member: Any, staff: Any, monkeypatch) -> None:
    browser = on_the_page(member, staff, monkeypatch)
    assert browser.get("/account/").status_code == 200


def test_a_token_of_before_tokens_were_bound_to_the_password_is_refused(member: Any) -> None:
    """Tokens issued before the password claim existed cannot be told from stolen ones."""
    from rest_framework_simplejwt.tokens import RefreshToken

    unbound = RefreshToken.for_user(member)
    assert_error(refreshed(str(unbound)), 401)
    bearer = APIClient(HTTP_AUTHORIZATION=f"Bearer {unbound.access_token}")
    assert_error(bearer.get("/v1/subscriptions"), 401)


def test_the_old_password_form_counts_like_a_sign_in(
    member: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(LoginThrottle, "THROTTLE_RATES", {"user": "1000/min", "login": "3/min"})
    browser = signed_in("alice")
    for _ in range(3):
        wrong = browser.post(
            "/account/password/",
            {"old_password": "guess", "new_password1": NEW, "new_password2": NEW},
        )
        assert wrong.status_code == 400

    right = browser.post(
        "/account/password/",
        {"old_password": PASSWORD, "new_password1": NEW, "new_password2": NEW},
    )

    assert right.status_code == 429
    assert "login attempts per address and username" in right.content.decode()
    assert get_user_model().objects.get(pk=member.pk).check_password(PASSWORD)
    # One lockout: the API's login refuses the right password too.
    assert_error(
        APIClient().post(
            "/v1/auth/login", {"username": "alice", "password": PASSWORD}, format="json"
        ),
        429,
    )


def test_a_weak_new_password_is_not_a_wrong_guess(
    member: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(LoginThrottle, "THROTTLE_RATES", {"user": "1000/min", "login": "3/min"})
    browser = signed_in("alice")
    for _ in range(4):
        weak = browser.post(
            "/account/password/",
            {"old_password": PASSWORD, "new_password1": "123", "new_password2": "123"},
        )
        assert weak.status_code == 400
    assert tokens("alice")["access_token"]
