"""Second factors on the pages: an authenticator app added on the Account page with a code it
makes, the sign-in's second step by its code or a recovery code, removal, and what refuses:
wrong and reused codes, a step left too long, another browser's step, a session not verified,
an app password's session, the throttle."""

import re
import time
from typing import Any

import pytest
from django.test import Client
from django_otp.plugins.otp_static.models import StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice

from accounts import services as accounts
from accounts.throttles import LoginThrottle
from factors import selectors, services
from tests.helpers import totp_code
from tests.web.helpers import PASSWORD


def _app_added(page: Client) -> tuple[TOTPDevice, list[str]]:
    shown = page.post("/account/factors/app/", {"password": PASSWORD})
    assert shown.status_code == 200
    body = shown.content.decode()
    assert "data:image/svg+xml" in body
    device = TOTPDevice.objects.get(confirmed=False)
    assert re.search(r"<code[^>]*>([A-Z2-7]+=*)</code>", body)
    answer = page.post(
        "/account/factors/app/confirm/", {"device": device.pk, "code": totp_code(device)}
    )
    assert answer.status_code == 200, answer.content.decode()
    codes = re.findall(
        r'<li><code class="password">([a-z0-9]+)</code></li>', answer.content.decode()
    )
    device.refresh_from_db()
    return device, codes


def _password_step(client: Client, next_page: str = "") -> Any:
    data = {"username": "alice", "password": PASSWORD}
    if next_page:
        data["next"] = next_page
    return client.post("/login/", data)


def test_an_app_added_then_the_sign_in_takes_its_code(page: Client, person: Any) -> None:
    device, codes = _app_added(page)
    assert device.confirmed
    assert len(codes) == services.RECOVERY_CODES
    assert selectors.factors_of(user=person).recovery_left == services.RECOVERY_CODES
    assert page.get("/account/").status_code == 200  # this session was verified by the app
    page.post("/logout/")

    first = _password_step(page, "/history/")
    assert first["Location"] == "/login/second/"
    assert page.get("/podcasts/").status_code == 302  # nobody signed in yet
    step = page.get("/login/second/")
    assert step.status_code == 200
    assert "authenticator app" in step.content.decode()
    wrong = page.post(
        "/login/second/", {"code": "000000" if totp_code(device, 1) != "000000" else "1"}
    )
    assert wrong.status_code == 400
    assert "does not work" in wrong.content.decode()
    time.sleep(1.1)  # django-otp's own throttle: a second after the first failure
    done = page.post(
        "/login/second/", {"code": totp_code(device, 1)[:3] + " " + totp_code(device, 1)[3:]}
    )
    assert done["Location"] == "/history/"
    assert page.get("/podcasts/").status_code == 200


def test_a_recovery_code_signs_in_once(page: Client, client: Client, person: Any) -> None:
    _device, codes = _app_added(page)
    _password_step(client)
    assert client.post("/login/second/", {"code": codes[0].upper()})["Location"] == "/podcasts/"
    assert StaticToken.objects.filter(token=codes[0]).count() == 0
    client.post("/logout/")
    _password_step(client)
    again = client.post("/login/second/", {"code": codes[0]})
    assert again.status_code == 400
    assert client.get("/podcasts/").status_code == 302


def test_a_step_left_too_long_or_after_a_new_password_is_over(
    page: Client, client: Client, person: Any, settings: Any
) -> None:
    device, _codes = _app_added(page)
    _password_step(client)
    accounts.password_set(user=person, password=PASSWORD + " new")
    gone = client.post("/login/second/", {"code": totp_code(device, 1)})
    assert gone["Location"] == "/login/"
    assert client.get("/podcasts/").status_code == 302
    accounts.password_set(user=person, password=PASSWORD)
    settings.FACTOR_STEP_SECONDS = -1
    _password_step(client)
    assert client.post("/login/second/", {"code": totp_code(device, 1)})["Location"] == "/login/"


def test_another_browser_cannot_finish_the_step(page: Client, person: Any) -> None:
    device, _codes = _app_added(page)
    alone = Client()
    assert alone.post("/login/second/", {"code": totp_code(device, 1)})["Location"] == "/login/"
    assert alone.get("/podcasts/").status_code == 302


def test_wrong_codes_count_against_the_login_throttle(
    page: Client, client: Client, person: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    device, _codes = _app_added(page)
    monkeypatch.setattr(LoginThrottle, "THROTTLE_RATES", {"user": "1000/min", "login": "3/min"})
    _password_step(client)
    for _ in range(3):
        client.post("/login/second/", {"code": "12345678"})
    refused = client.post("/login/second/", {"code": totp_code(device, 1)})
    assert refused.status_code == 429
    assert client.get("/podcasts/").status_code == 302


def test_removing_the_last_factor_takes_the_codes_and_the_second_step(
    page: Client, client: Client, person: Any
) -> None:
    device, _codes = _app_added(page)
    kept = page.post("/account/factors/remove/", {"factor": f"app:{device.pk}", "password": "no"})
    assert kept.status_code == 302
    assert selectors.has_factors(user=person)
    for junk in ("app:x", "disk:1", "app:99999999", "app:" + "9" * 40, ""):
        page.post("/account/factors/remove/", {"factor": junk, "password": PASSWORD})
        assert selectors.has_factors(user=person)
    page.post("/account/factors/remove/", {"factor": f"app:{device.pk}", "password": PASSWORD})
    assert not selectors.has_factors(user=person)
    assert selectors.factors_of(user=person).recovery_left is None
    assert _password_step(client)["Location"] == "/podcasts/"


def test_a_session_from_before_the_first_factor_changes_none(page: Client, person: Any) -> None:
    older = Client()
    older.post("/login/", {"username": "alice", "password": PASSWORD})
    device, _codes = _app_added(page)
    assert "sign in again with one" in older.get("/account/").content.decode()
    for path, data in (
        ("/account/factors/remove/", {"factor": f"app:{device.pk}", "password": PASSWORD}),
        ("/account/factors/recovery-codes/", {"password": PASSWORD}),
        ("/account/factors/app/", {"password": PASSWORD}),
    ):
        assert older.post(path, data).status_code == 302
    assert selectors.factors_of(user=person).apps == [device]
    assert TOTPDevice.objects.filter(confirmed=False).count() == 0


def test_a_confirmation_with_a_wrong_code_or_anothers_device_adds_nothing(
    page: Client, person: Any, stranger: Any
) -> None:
    page.post("/account/factors/app/", {"password": PASSWORD})
    device = TOTPDevice.objects.get(user=person, confirmed=False)
    wrong = page.post("/account/factors/app/confirm/", {"device": device.pk, "code": "abc"})
    assert wrong.status_code == 400
    theirs = services.app_begin(user=stranger)
    page.post("/account/factors/app/confirm/", {"device": theirs.pk, "code": totp_code(theirs)})
    for junk in ({"device": "x", "code": "1"}, {}, {"device": "1" * 30, "code": "\x00"}):
        assert page.post("/account/factors/app/confirm/", junk).status_code == 302
    assert not selectors.has_factors(user=person)
    assert not selectors.has_factors(user=stranger)


def test_an_app_passwords_session_reaches_no_factor_page(person: Any) -> None:
    _app, secret = accounts.app_password_create(user=person, name="AntennaPod")
    app = Client()
    assert (
        app.post("/api/2/auth/alice/login.json", HTTP_AUTHORIZATION=_basic(secret)).status_code
        == 200
    )
    for path in (
        "/account/factors/app/",
        "/account/factors/recovery-codes/",
        "/account/passkeys/registration/begin/",
    ):
        answer = app.post(path, {"password": PASSWORD})
        assert answer.status_code in (302, 401, 403, 404)  # 404: no passkeys (PASSKEYS)
    assert not selectors.has_factors(user=person)
    assert TOTPDevice.objects.count() == 0


def _basic(secret: str) -> str:
    import base64

    return "Basic " + base64.b64encode(f"alice:{secret}".encode()).decode()


def test_staff_without_a_factor_are_held_to_the_account_page(
    client: Client, person: Any, settings: Any
) -> None:
    settings.STAFF_REQUIRE_TWO_FACTORS = True
    type(person).objects.filter(pk=person.pk).update(is_staff=True)
    _password_step(client)
    held = client.get("/podcasts/")
    assert held["Location"] == "/account/"
    assert client.get("/admin/")["Location"] == "/account/"
    assert client.get("/account/").status_code == 200
    device, _codes = _app_added(client)
    assert client.get("/admin/").status_code == 200  # verified by the app it just added
    client.post("/logout/")
    _password_step(client)
    client.post("/login/second/", {"code": totp_code(device, 1)})
    assert client.get("/podcasts/").status_code == 200
