"""One counter and one lockout for every surface that checks a password (docs/api.md,
"Limits"): /v1/auth/login, Basic on the gpodder API, the sign-in page, and the admin, whose
sign-in is that page."""

import base64
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from accounts.throttles import LoginThrottle
from tests.factories import UserFactory

PASSWORD = "a long and unusual passphrase for lockouts"
LIMIT = 3


@pytest.fixture(autouse=True)
def _three_a_minute(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(LoginThrottle, "THROTTLE_RATES", {"user": "1000/min", "login": "3/min"})


@pytest.fixture
def staff(db: None) -> Any:
    return UserFactory(username="root", with_password=PASSWORD, is_staff=True, is_superuser=True)


def api_login(password: str) -> int:
    answer = APIClient().post(
        "/v1/auth/login", {"username": "root", "password": password}, format="json"
    )
    return int(answer.status_code)


def basic_login(password: str) -> int:
    header = "Basic " + base64.b64encode(f"root:{password}".encode()).decode()
    answer = APIClient().post("/api/2/auth/root/login.json", HTTP_AUTHORIZATION=header)
    return int(answer.status_code)


def page_sign_in(password: str) -> int:
    client = Client()
    return int(client.post("/login/", {"username": "root", "password": password}).status_code)


def admin_sign_in(password: str) -> int:
    """The admin's sign-in as staff reach it: from /admin/, to the page it sends them to."""
    client = Client()
    sent_to = client.get("/admin/", follow=True).redirect_chain[-1][0]
    answer = client.post(sent_to, {"username": "root", "password": password})
    if answer.status_code == 302:
        return 302 if client.get("/admin/").status_code == 200 else 0
    return int(answer.status_code)


SURFACES: dict[str, Callable[[str], int]] = {
    "api": api_login,
    "basic": basic_login,
    "page": page_sign_in,
    "admin": admin_sign_in,
}
SIGNED_IN = {"api": 200, "basic": 200, "page": 302, "admin": 302}


@pytest.mark.parametrize("tried_on", list(SURFACES))
@pytest.mark.parametrize("guessed_on", list(SURFACES))
def test_a_lockout_earned_anywhere_holds_everywhere_at_once(
    staff: Any, guessed_on: str, tried_on: str
) -> None:
    for _ in range(LIMIT):
        assert SURFACES[guessed_on]("a wrong guess") != SIGNED_IN[guessed_on]

    assert SURFACES[tried_on](PASSWORD) == 429


@pytest.mark.parametrize("surface", list(SURFACES))
def test_the_right_password_signs_in_below_the_limit(staff: Any, surface: str) -> None:
    for _ in range(LIMIT - 1):
        SURFACES[surface]("a wrong guess")
    assert SURFACES[surface](PASSWORD) == SIGNED_IN[surface]


def test_the_admin_sends_staff_to_the_sign_in_page_and_back(staff: Any) -> None:
    client = Client()
    answer = client.get("/admin/auth/user/")
    assert answer.status_code == 302
    sent_to = client.get(answer["Location"])
    assert sent_to.status_code == 302
    assert sent_to["Location"] == "/login/?next=/admin/auth/user/"

    back = client.post(sent_to["Location"], {"username": "root", "password": PASSWORD})

    assert back["Location"] == "/admin/auth/user/"
    assert client.get("/admin/auth/user/").status_code == 200


def test_the_admin_sign_in_form_takes_no_password_itself(staff: Any) -> None:
    client = Client()
    answer = client.post("/admin/login/", {"username": "root", "password": PASSWORD})
    assert answer.status_code == 302
    assert client.get("/admin/").status_code == 302  # not signed in


def test_a_person_who_is_not_staff_is_told_so(db: None) -> None:
    UserFactory(username="alice", with_password=PASSWORD)
    client = Client()
    client.post("/login/", {"username": "alice", "password": PASSWORD})
    answer = client.get("/admin/", follow=True)
    assert answer.status_code == 403


@pytest.mark.parametrize(
    "spelling", [" root", "root ", "\troot", "root\u00a0", "\uff52\uff4f\uff4f\uff54"]
)
def test_every_spelling_that_signs_in_counts_in_one_lockout(staff: Any, spelling: str) -> None:
    """The sign-in page strips the name and reads it in NFKC: each spelling that reaches the
    account is counted with it."""
    assert page_sign_in_as(spelling, PASSWORD) == 302  # it does sign in as root
    for _ in range(LIMIT):
        assert page_sign_in_as(spelling, "a wrong guess") == 200
    assert page_sign_in_as("root", PASSWORD) == 429
    assert page_sign_in_as(spelling, PASSWORD) == 429
    assert api_login(PASSWORD) == 429


def page_sign_in_as(username: str, password: str) -> int:
    return int(Client().post("/login/", {"username": username, "password": password}).status_code)


def test_remembered_basic_credentials_obey_a_lockout(staff: Any) -> None:
    """Kasts sends Basic on every request: once the username is locked out, a remembered right
    password waits too."""
    assert basic_login(PASSWORD) == 200
    assert basic_login(PASSWORD) == 200  # remembered now
    for _ in range(LIMIT):
        api_login("a wrong guess")
    assert basic_login(PASSWORD) == 429


def test_the_admins_password_change_is_the_account_page(staff: Any) -> None:
    """The admin's own form would be an unthrottled oracle for the old password."""
    client = Client()
    client.post("/login/", {"username": "root", "password": PASSWORD})
    answer = client.get("/admin/password_change/")
    assert answer.status_code == 302
    assert answer["Location"] == "/account/"
    posted = client.post(
        "/admin/password_change/",
        {
            "old_password": PASSWORD,
            "new_password1": "x1y2z3w4v5u6",
            "new_password2": "x1y2z3w4v5u6",
        },
    )
    assert posted.status_code == 302
    staff.refresh_from_db()
    assert staff.check_password(PASSWORD)
