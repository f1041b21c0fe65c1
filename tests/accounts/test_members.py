"""Members made by staff on the People page (docs/operations.md, "The admin"): a one-time
password to hand over, which signs in on the pages only to choose one's own and which no API
takes; a new one-time password, which ends the account's sessions and tokens and keeps its app
passwords; and an account turned off, which every API refuses, and on again, with its data."""

import re
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.test import APIClient

from accounts import selectors, services
from accounts.models import OneTimePassword
from accounts.services import refresh_token_for
from core.exceptions import InvalidInput, NotAuthorized, NotFound
from nextcloud import flows
from tests.factories import UserFactory
from tests.helpers import PASSWORD, assert_error, basic, client_for, subscribe
from tests.nextcloud.helpers import APP, nextcloud_client

ONE_TIME = re.compile(r"^[a-hjkmnp-z2-9]{4}(-[a-hjkmnp-z2-9]{4}){3}$")
OWN = "a password of my very own 42"
GPODDER = "/api/2/devices/{}.json"
OPA = "/v1/subscriptions"
NEXTCLOUD = f"{APP}/subscriptions"


def users() -> Any:
    return get_user_model().objects


def sign_in(username: str, password: str) -> Any:
    """The sign-in page's answer, and the browser that sent it."""
    browser = Client()
    return browser, browser.post("/login/", {"username": username, "password": password})


def choose(ticket: str, password: str = OWN) -> Any:
    return services.password_choose(ticket=ticket, password=password)


def ticket_of(user: Any) -> str:
    user.refresh_from_db()
    found = selectors.one_time_ticket(user=user)
    assert found is not None
    return found


# --- Adding a member ----------------------------------------------------------------------------


def test_a_member_is_made_with_a_one_time_password(db: None) -> None:
    user, password = services.user_add(username="  bob ")
    assert user.get_username() == "bob"
    assert ONE_TIME.match(password), password
    stored = users().get(pk=user.pk)
    assert stored.check_password(password)
    assert stored.is_active
    assert not stored.is_staff
    assert not stored.is_superuser
    assert stored.last_login is None
    assert selectors.password_is_one_time(user=stored)


def test_two_members_get_two_passwords(db: None) -> None:
    _, one = services.user_add(username="bob")
    _, two = services.user_add(username="carol")
    assert one != two


@pytest.mark.parametrize(
    ("username", "says"),
    [
        ("", "Give a username"),
        ("   ", "Give a username"),
        ("bob smith", "Enter a valid username"),
        ("bob/../x", "Enter a valid username"),
        ("a" * 151, "at most 150 characters"),
        ("bob\x00", "Enter a valid username"),
        ("ALICE", "That username is already taken"),
        ("alice", "That username is already taken"),
    ],
)
def test_a_username_follows_the_rules_of_registration(alice: Any, username: str, says: str) -> None:
    before = users().count()
    with pytest.raises(InvalidInput) as refused:
        services.user_add(username=username)
    assert says in refused.value.message
    assert users().count() == before
    assert not OneTimePassword.objects.exists()


def _refusal(make: Any) -> Any:
    try:
        make()
    except InvalidInput as exc:
        return exc.errors
    return "made"


@pytest.mark.parametrize("username", ["bad name", "x" * 151, "   ", "BOB"])
def test_registration_and_adding_refuse_the_same_usernames(db: None, username: str) -> None:
    """One rule, in one place: what registration refuses, adding refuses in the same words."""
    UserFactory(username="bob")
    registered = _refusal(lambda: services.user_register(username=username, password=PASSWORD))
    added = _refusal(lambda: services.user_add(username=username))
    assert registered != "made"
    assert registered == added


# --- The one-time password: the pages only, to choose one's own ---------------------------------


def test_the_one_time_password_signs_in_nowhere_but_to_choose_ones_own(db: None) -> None:
    user, password = services.user_add(username="bob")
    browser, answer = sign_in("bob", password)
    assert answer.status_code == 200
    assert "Choose your password" in answer.content.decode()
    assert browser.get("/podcasts/").status_code == 302  # not signed in

    choose(ticket_of(user))

    stored = users().get(pk=user.pk)
    assert stored.check_password(OWN)
    assert not stored.check_password(password)
    assert not selectors.password_is_one_time(user=stored)
    assert not OneTimePassword.objects.filter(user_id=user.pk).exists()
    browser, answer = sign_in("bob", OWN)
    assert answer.status_code == 302
    assert browser.get("/podcasts/").status_code == 200


def test_no_api_takes_the_one_time_password(db: None) -> None:
    _, password = services.user_add(username="bob")
    opa = APIClient().post(
        "/v1/auth/login", {"username": "bob", "password": password}, format="json"
    )
    assert_error(opa, 401)
    gpodder = APIClient().get(GPODDER.format("bob"), HTTP_AUTHORIZATION=basic("bob", password))
    assert_error(gpodder, 401)
    assert_error(nextcloud_client("bob", password).get(NEXTCLOUD), 401)


def test_once_chosen_every_api_takes_the_own_password(db: None) -> None:
    user, _ = services.user_add(username="bob")
    choose(ticket_of(user))
    opa = APIClient().post("/v1/auth/login", {"username": "bob", "password": OWN}, format="json")
    assert opa.status_code == 200
    gpodder = APIClient().get(GPODDER.format("bob"), HTTP_AUTHORIZATION=basic("bob", OWN))
    assert gpodder.status_code == 200
    assert nextcloud_client("bob", OWN).get(NEXTCLOUD).status_code == 200


def test_a_password_set_another_way_is_no_longer_one_time(db: None) -> None:
    """The admin's "Reset password" or `changepassword`: the person's from then on."""
    user, _ = services.user_add(username="bob")
    user.set_password(OWN)
    user.save()
    assert not selectors.password_is_one_time(user=user)
    assert selectors.one_time_ticket(user=user) is None
    gpodder = APIClient().get(GPODDER.format("bob"), HTTP_AUTHORIZATION=basic("bob", OWN))
    assert gpodder.status_code == 200


def test_an_ordinary_account_has_no_ticket(alice: Any) -> None:
    assert selectors.one_time_ticket(user=alice) is None


@pytest.mark.parametrize(
    "ticket",
    ["", "nonsense", "eyJ1c2VyIjoxfQ:1tXyz:forged", "x" * 500],
)
def test_a_forged_ticket_changes_nothing(db: None, ticket: str) -> None:
    user, password = services.user_add(username="bob")
    with pytest.raises(NotAuthorized) as refused:
        choose(ticket)
    assert "sign in again with the one-time password" in refused.value.message
    assert users().get(pk=user.pk).check_password(password)


def test_an_old_ticket_changes_nothing(db: None, monkeypatch: pytest.MonkeyPatch) -> None:
    user, password = services.user_add(username="bob")
    ticket = ticket_of(user)
    monkeypatch.setattr(services, "TICKET_SECONDS", -1)  # older than any age
    with pytest.raises(NotAuthorized):
        choose(ticket)
    assert users().get(pk=user.pk).check_password(password)


def test_a_ticket_of_a_password_reset_since_changes_nothing(db: None, staff: Any) -> None:
    user, _ = services.user_add(username="bob")
    ticket = ticket_of(user)
    _, again = services.password_reset(user_id=user.pk, acting_user=staff)
    with pytest.raises(NotAuthorized):
        choose(ticket)
    assert users().get(pk=user.pk).check_password(again)


def test_a_ticket_serves_once(db: None) -> None:
    user, _ = services.user_add(username="bob")
    ticket = ticket_of(user)
    choose(ticket)
    with pytest.raises(NotAuthorized):
        choose(ticket, "yet another password of mine 7")
    assert users().get(pk=user.pk).check_password(OWN)


def test_the_own_password_goes_through_the_validators(db: None) -> None:
    user, password = services.user_add(username="bob")
    for weak, says in (("1234", "too short"), ("password", "too common"), ("bob", "too short")):
        with pytest.raises(InvalidInput) as refused:
            choose(ticket_of(user), weak)
        assert says in refused.value.message
        assert "password" in (refused.value.errors or {})
    with pytest.raises(InvalidInput) as same:
        choose(ticket_of(user), password)
    assert "not the one-time password" in same.value.message
    assert users().get(pk=user.pk).check_password(password)


def test_an_account_turned_off_since_the_sign_in_cannot_choose(db: None, staff: Any) -> None:
    user, password = services.user_add(username="bob")
    ticket = ticket_of(user)
    services.user_turn_off(user_id=user.pk, acting_user=staff)
    with pytest.raises(NotAuthorized) as refused:
        choose(ticket)
    assert "cannot sign in now" in refused.value.message
    assert users().get(pk=user.pk).check_password(password)


# --- A new one-time password ----------------------------------------------------------------


def test_a_new_one_time_password_ends_sessions_and_tokens_and_keeps_app_passwords(
    alice: Any, staff: Any
) -> None:
    browser, _ = sign_in("alice", PASSWORD)
    assert browser.get("/podcasts/").status_code == 200
    gpodder_app = APIClient()
    gpodder_app.get(GPODDER.format("alice"), HTTP_AUTHORIZATION=basic("alice"))
    assert gpodder_app.get(GPODDER.format("alice")).status_code == 200  # its session cookie
    refresh = str(refresh_token_for(alice))
    opa = client_for(alice)
    assert opa.get(OPA).status_code == 200
    _, app_secret = services.app_password_create(user=alice, name="Kasts")

    user, password = services.password_reset(user_id=alice.pk, acting_user=staff)

    assert user.pk == alice.pk
    assert ONE_TIME.match(password)
    assert browser.get("/podcasts/").status_code == 302  # signed out
    assert_error(gpodder_app.get(GPODDER.format("alice")), 401)
    assert_error(opa.get(OPA), 401)
    refreshed = APIClient().post("/v1/auth/refresh", {"refresh_token": refresh}, format="json")
    assert_error(refreshed, 401)
    assert_error(APIClient().get(OPA, HTTP_AUTHORIZATION=basic("alice")), 401)
    # The old password signs in nowhere; app passwords still sync.
    assert sign_in("alice", PASSWORD)[1].status_code == 200
    assert "Wrong username or password" in sign_in("alice", PASSWORD)[1].content.decode()
    with_app = APIClient().get(
        GPODDER.format("alice"), HTTP_AUTHORIZATION=basic("alice", app_secret)
    )
    assert with_app.status_code == 200
    assert nextcloud_client("alice", app_secret).get(NEXTCLOUD).status_code == 200
    opa_app = APIClient().post(
        "/v1/auth/login", {"username": "alice", "password": app_secret}, format="json"
    )
    assert opa_app.status_code == 200
    # The new one signs in to choose one's own.
    assert "Choose your password" in sign_in("alice", password)[1].content.decode()


def test_a_new_password_for_oneself_is_refused(staff: Any) -> None:
    staff.set_password(PASSWORD)
    staff.save()
    with pytest.raises(InvalidInput) as refused:
        services.password_reset(user_id=staff.pk, acting_user=staff)
    assert "account page" in refused.value.message
    assert users().get(pk=staff.pk).check_password(PASSWORD)


def test_a_new_password_for_nobody_is_not_found(staff: Any) -> None:
    for missing in (10**6, 2**63 - 1):
        with pytest.raises(NotFound):
            services.password_reset(user_id=missing, acting_user=staff)


def test_an_account_turned_off_stays_off_with_its_new_password(alice: Any, staff: Any) -> None:
    services.user_turn_off(user_id=alice.pk, acting_user=staff)
    _, password = services.password_reset(user_id=alice.pk, acting_user=staff)
    assert not users().get(pk=alice.pk).is_active
    browser, answer = sign_in("alice", password)
    assert "Choose your password" not in answer.content.decode()
    assert browser.get("/podcasts/").status_code == 302


# --- Turning an account off, and on again ----------------------------------------------------


def test_an_account_turned_off_is_refused_by_every_api_and_keeps_its_data(
    alice: Any, staff: Any
) -> None:
    subscribe(alice, "https://kept.example/feed.xml")
    _, app_secret = services.app_password_create(user=alice, name="AntennaPod")
    opa = client_for(alice)
    refresh = str(refresh_token_for(alice))
    gpodder_app = APIClient()
    gpodder_app.credentials(HTTP_AUTHORIZATION=basic("alice"))
    nextcloud_app = nextcloud_client("alice", app_secret)
    browser, _ = sign_in("alice", PASSWORD)
    for client, path in ((opa, OPA), (gpodder_app, GPODDER.format("alice"))):
        assert client.get(path).status_code == 200
    assert nextcloud_app.get(NEXTCLOUD).status_code == 200  # remembered by this process now

    user = services.user_turn_off(user_id=alice.pk, acting_user=staff)

    assert not user.is_active
    # The Open Podcast API: its bearer token, its refresh token, a new login.
    assert_error(opa.get(OPA), 401)
    refreshed = APIClient().post("/v1/auth/refresh", {"refresh_token": refresh}, format="json")
    assert_error(refreshed, 401)
    for secret in (PASSWORD, app_secret):
        login = APIClient().post(
            "/v1/auth/login", {"username": "alice", "password": secret}, format="json"
        )
        assert_error(login, 401)
    # The gpodder API: Basic (remembered or not) and its session cookie.
    assert_error(gpodder_app.get(GPODDER.format("alice")), 401)
    gpodder_app.credentials()
    assert_error(gpodder_app.get(GPODDER.format("alice")), 401)
    with_app = APIClient().get(
        GPODDER.format("alice"), HTTP_AUTHORIZATION=basic("alice", app_secret)
    )
    assert_error(with_app, 401)
    # Nextcloud's: Basic with an app password, and with the password.
    assert_error(nextcloud_app.get(NEXTCLOUD), 401)
    assert_error(nextcloud_client("alice").get(NEXTCLOUD), 401)
    # The pages: the session ends, and the sign-in refuses.
    assert browser.get("/podcasts/").status_code == 302
    assert sign_in("alice", PASSWORD)[0].get("/podcasts/").status_code == 302
    # Kept: the subscription and the app password.
    assert alice.subscriptions.count() == 1
    assert alice.app_passwords.count() == 1

    services.user_turn_on(user_id=alice.pk)

    assert users().get(pk=alice.pk).is_active
    assert nextcloud_client("alice", app_secret).get(NEXTCLOUD).status_code == 200
    assert opa.get(OPA).status_code == 200  # its token had not expired
    assert sign_in("alice", PASSWORD)[0].get("/podcasts/").status_code == 200


def test_the_login_flow_of_an_account_turned_off_is_refused(alice: Any, staff: Any) -> None:
    started = flows.login_flow_start(client_name="AntennaPod", address="192.0.2.1")
    services.user_turn_off(user_id=alice.pk, acting_user=staff)
    with pytest.raises(NotAuthorized):
        flows.login_flow_grant(login_token=started.login_token, user=alice)


def test_staff_cannot_turn_themselves_off(staff: Any) -> None:
    with pytest.raises(InvalidInput) as refused:
        services.user_turn_off(user_id=staff.pk, acting_user=staff)
    assert "your own account" in refused.value.message
    assert users().get(pk=staff.pk).is_active


def test_turning_nobody_off_or_on_is_not_found(staff: Any) -> None:
    with pytest.raises(NotFound):
        services.user_turn_off(user_id=10**6, acting_user=staff)
    with pytest.raises(NotFound):
        services.user_turn_on(user_id=10**6)


def test_another_staff_account_can_be_turned_off(staff: Any) -> None:
    helper: Any = UserFactory(username="helper", is_staff=True)
    services.user_turn_off(user_id=helper.pk, acting_user=staff)
    assert not users().get(pk=helper.pk).is_active
