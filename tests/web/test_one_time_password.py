"""Signing in with a one-time password staff handed over (docs/web.md, "Signing in"): the
sign-in's answer asks for the person's own password, signs nobody in until it is set, then
signs them in with it and goes on to where the sign-in was going."""

import re
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from accounts import selectors, services
from nextcloud import flows

OWN = "a password of my very own 42"
CHOOSE = "/login/password/"


@pytest.fixture
def member(db: None) -> tuple[Any, str]:
    return services.user_add(username="bob")


def sign_in(browser: Client, password: str, **extra: str) -> Any:
    return browser.post("/login/", {"username": "bob", "password": password, **extra})


def fields_of(response: Any) -> dict[str, str]:
    """The hidden fields of the choice's form, as the browser would send them back."""
    body = response.content.decode()
    form = body[body.index(f'action="{CHOOSE}"') :]
    return dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', form))


def test_the_one_time_password_leads_to_choosing_ones_own(member: tuple[Any, str]) -> None:
    user, password = member
    browser = Client()
    answer = sign_in(browser, password, next="/history/")
    assert answer.status_code == 200
    assert "no-store" in answer["Cache-Control"]
    body = answer.content.decode()
    assert "Choose your password" in body
    assert "<strong>bob</strong>, you signed in with a one-time password" in body
    assert browser.get("/podcasts/").status_code == 302  # nobody is signed in yet
    hidden = fields_of(answer)
    assert hidden["username"] == "bob"
    assert hidden["next"] == "/history/"
    assert password not in body

    done = browser.post(CHOOSE, {**hidden, "password": OWN, "password_again": OWN})

    assert done.status_code == 302
    assert done["Location"] == "/history/"
    assert browser.get("/podcasts/").status_code == 200
    stored = get_user_model().objects.get(pk=user.pk)
    assert stored.check_password(OWN)
    assert stored.last_login is not None
    assert not selectors.password_is_one_time(user=stored)
    # From then on, the one-time password signs in nowhere, and the own one as any password.
    assert "Wrong username or password" in sign_in(Client(), password).content.decode()
    assert sign_in(Client(), OWN).status_code == 302


def test_without_a_next_it_goes_to_the_podcasts(member: tuple[Any, str]) -> None:
    browser = Client()
    hidden = fields_of(sign_in(browser, member[1]))
    done = browser.post(CHOOSE, {**hidden, "password": OWN, "password_again": OWN})
    assert done["Location"] == "/podcasts/"
    followed = browser.get("/podcasts/").content.decode()
    assert "Your password is set" in followed


def test_a_next_elsewhere_is_not_followed(member: tuple[Any, str]) -> None:
    browser = Client()
    hidden = fields_of(sign_in(browser, member[1]))
    data = {**hidden, "next": "//evil.example/", "password": OWN, "password_again": OWN}
    assert browser.post(CHOOSE, data)["Location"] == "/podcasts/"


@pytest.mark.parametrize(
    ("password", "again", "says"),
    [
        ("1234", "1234", "too short"),
        ("password", "password", "too common"),
        (OWN, OWN + "x", "The two passwords differ."),
        ("", "", "This field is required."),
    ],
)
def test_a_password_refused_is_named_and_nothing_changes(
    member: tuple[Any, str], password: str, again: str, says: str
) -> None:
    user, one_time = member
    browser = Client()
    hidden = fields_of(sign_in(browser, one_time))
    refused = browser.post(CHOOSE, {**hidden, "password": password, "password_again": again})
    assert refused.status_code == 400
    body = refused.content.decode()
    assert says in body
    assert "Input could not be validated" not in body
    assert browser.get("/podcasts/").status_code == 302
    assert get_user_model().objects.get(pk=user.pk).check_password(one_time)
    # The form is there again, with its ticket: the person tries again.
    retry = browser.post(CHOOSE, {**fields_of(refused), "password": OWN, "password_again": OWN})
    assert retry.status_code == 302


def test_the_one_time_password_again_is_refused(member: tuple[Any, str]) -> None:
    browser = Client()
    hidden = fields_of(sign_in(browser, member[1]))
    data = {**hidden, "password": member[1], "password_again": member[1]}
    refused = browser.post(CHOOSE, data)
    assert refused.status_code == 400
    assert "not the one-time password" in refused.content.decode()


@pytest.mark.parametrize("ticket", ["", "forged", "a" * 10_000, "eyJ1c2VyIjogMX0:x:y"])
def test_a_forged_ticket_signs_nobody_in(member: tuple[Any, str], ticket: str) -> None:
    user, one_time = member
    browser = Client()
    data = {"ticket": ticket, "username": "bob", "password": OWN, "password_again": OWN}
    refused = browser.post(CHOOSE, data)
    assert refused.status_code == 400
    assert browser.get("/podcasts/").status_code == 302
    assert get_user_model().objects.get(pk=user.pk).check_password(one_time)


def test_a_stale_ticket_says_to_sign_in_again(member: tuple[Any, str], staff: Any) -> None:
    user, _ = member
    browser = Client()
    hidden = fields_of(sign_in(browser, member[1]))
    services.password_reset(user_id=user.pk, acting_user=staff)
    refused = browser.post(CHOOSE, {**hidden, "password": OWN, "password_again": OWN})
    assert refused.status_code == 400
    body = refused.content.decode()
    assert "sign in again with the one-time password you were given" in body
    assert 'href="/login/">Sign in again' in body


def test_an_account_turned_off_since_cannot_choose(member: tuple[Any, str], staff: Any) -> None:
    user, _ = member
    browser = Client()
    hidden = fields_of(sign_in(browser, member[1]))
    services.user_turn_off(user_id=user.pk, acting_user=staff)
    refused = browser.post(CHOOSE, {**hidden, "password": OWN, "password_again": OWN})
    assert refused.status_code == 400
    assert "This account cannot sign in now" in refused.content.decode()
    assert browser.get("/podcasts/").status_code == 302


def test_the_choice_is_only_a_forms_answer(member: tuple[Any, str]) -> None:
    browser = Client()
    assert browser.get(CHOOSE)["Location"] == "/login/"
    assert browser.put(CHOOSE).status_code == 405


def test_the_choice_needs_its_csrf_token(member: tuple[Any, str]) -> None:
    browser = Client(enforce_csrf_checks=True)
    form = browser.get("/login/")
    token = form.cookies["csrftoken"].value
    answer = browser.post(
        "/login/", {"username": "bob", "password": member[1], "csrfmiddlewaretoken": token}
    )
    hidden = fields_of(answer)
    assert "csrfmiddlewaretoken" in hidden
    del hidden["csrfmiddlewaretoken"]
    data = {**hidden, "password": OWN, "password_again": OWN}
    assert browser.post(CHOOSE, data).status_code == 403
    assert get_user_model().objects.get(pk=member[0].pk).check_password(member[1])


def test_a_wrong_one_time_password_counts_as_any_wrong_password(member: tuple[Any, str]) -> None:
    answer = sign_in(Client(), "wxyz-wxyz-wxyz-wxyz")
    assert "Wrong username or password." in answer.content.decode()
    assert "Choose your password" not in answer.content.decode()


def test_on_the_way_to_an_apps_login_the_choice_goes_on_to_it(member: tuple[Any, str]) -> None:
    started = flows.login_flow_start(client_name="AntennaPod", address="192.0.2.1")
    flow = f"/login/flow/{started.login_token}/"
    browser = Client()
    assert browser.get(flow)["Location"].startswith("/login/?next=")
    hidden = fields_of(sign_in(browser, member[1], next=flow))
    done = browser.post(CHOOSE, {**hidden, "password": OWN, "password_again": OWN})
    assert done["Location"] == flow
    assert "Allow" in browser.get(flow).content.decode()
