"""Where there is mail, a new account confirms its address before it signs in
(docs/public-instance.md, "Registration"): off until the link mailed to it is opened, removed
when it never is, throttled per address as well as per network."""

from typing import Any
from urllib.parse import urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.test import APIClient

from accounts import addresses, invitations
from accounts.models import AwaitingConfirmation, ConfirmedAddress
from accounts.throttles import MailThrottle
from mail import services
from mail.models import Mail
from tests.factories import UserFactory
from tests.helpers import Clock
from tests.mailserver import Mailbox, links

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "the newcomer's passphrase 77"


def register(
    address: str, path: str = "/register/", username: str = "newcomer", source: str = "127.0.0.1"
) -> Any:
    fields = {"username": username, "password": PASSWORD, "password_again": PASSWORD}
    return Client().post(path, {**fields, "address": address}, REMOTE_ADDR=source)


def signs_in(username: str = "newcomer") -> bool:
    answer = Client().post("/login/", {"username": username, "password": PASSWORD})
    return bool(answer.status_code == 302)


def newcomer() -> Any:
    return get_user_model().objects.get(username="newcomer")


def confirm_path(mailbox: Mailbox, index: int = 0) -> str:
    return urlsplit(links(mailbox.wait_for(index + 1)[index])[0]).path


@pytest.fixture
def open_registration(settings: Any, mailbox: Mailbox) -> Mailbox:
    settings.REGISTRATION = "open"
    return mailbox


def test_a_new_account_works_once_its_address_is_confirmed(open_registration: Mailbox) -> None:
    answer = register("New@Example.com")
    assert answer.status_code == 200
    text = answer.content.decode()
    assert 'is on its way to <strong class="url">New@example.com</strong>' in text
    user = newcomer()
    assert not user.is_active
    assert not signs_in()
    login = APIClient().post(
        "/v1/auth/login", {"username": "newcomer", "password": PASSWORD}, format="json"
    )
    assert login.status_code == 401

    path = confirm_path(open_registration)
    assert (
        'Make <strong class="url">New@example.com</strong>' in Client().get(path).content.decode()
    )
    done = Client().post(path, follow=True)
    assert "New@example.com is confirmed: your account works" in done.content.decode()
    user.refresh_from_db()
    assert user.is_active
    assert addresses.address_confirmed(user=user)
    assert not AwaitingConfirmation.objects.exists()
    assert signs_in()
    assert Client().post(path).status_code == 404  # once


def test_an_invitation_makes_an_account_that_confirms_its_address(
    mailbox: Mailbox, settings: Any
) -> None:
    settings.REGISTRATION = "invitation"
    host: Any = UserFactory(username="root", is_staff=True)
    _, token = invitations.invitation_create(user=host)
    assert register("me@example.com", f"/register/{token}/").status_code == 200
    assert not signs_in()
    Client().post(confirm_path(mailbox))
    assert signs_in()
    assert invitations.Invitation.objects.get().used_by == newcomer()


@pytest.mark.parametrize(
    ("address", "problem"),
    [
        ("", "Type your email address"),
        ("not an address", "Enter an email address"),
        ("a\x00@b.c", "Null characters"),
    ],
)
def test_without_a_good_address_no_account_is_made(
    open_registration: Mailbox, address: str, problem: str
) -> None:
    answer = register(address)
    assert answer.status_code == 200
    assert problem in answer.content.decode()
    assert not get_user_model().objects.exists()
    assert not Mail.objects.exists()


def test_registrations_are_throttled_per_address_too(
    open_registration: Mailbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(MailThrottle, "THROTTLE_RATES", {"mail": "1/hour"})
    assert register("me@example.com", username="one", source="192.0.2.1").status_code == 200
    again = register("me@example.com", username="two", source="198.51.100.1")
    assert again.status_code == 429
    assert "mail sent per address" in again.content.decode()
    assert not get_user_model().objects.filter(username="two").exists()


def test_an_account_never_confirmed_is_removed_and_its_name_freed(
    open_registration: Mailbox, clock: Clock
) -> None:
    register("me@example.com")
    open_registration.wait_for(1)
    clock.advance(days=3, minutes=30)
    assert services.mail_sweep()["registrations_removed"] == 0  # its link still works
    clock.advance(hours=1)
    assert services.mail_sweep()["registrations_removed"] == 1
    assert not get_user_model().objects.exists()
    assert register("me@example.com").status_code == 200


def test_a_turned_on_account_is_never_removed(open_registration: Mailbox, clock: Clock) -> None:
    register("me@example.com")
    get_user_model().objects.update(is_active=True)  # staff turned it on
    clock.advance(days=5)
    assert services.mail_sweep()["registrations_removed"] == 0
    assert get_user_model().objects.filter(username="newcomer").exists()


def test_an_address_another_account_confirmed_tells_only_its_mailbox(
    open_registration: Mailbox,
) -> None:
    owner: Any = UserFactory(username="owner", email="taken@example.com")
    ConfirmedAddress.objects.create(
        user=owner,
        address="taken@example.com",
        key="taken@example.com",
        confirmed="2026-01-01T00:00Z",
    )
    answer = register("taken@example.com")
    assert answer.status_code == 200  # the same answer as for any address
    refused = Client().post(confirm_path(open_registration))
    assert refused.status_code == 409
    assert not newcomer().is_active


def test_an_account_staff_turned_off_is_not_turned_on_by_a_link(mailbox: Mailbox) -> None:
    user: Any = UserFactory(username="off", email="off@example.com")
    mark = addresses.state_mark(user)
    token = addresses.confirmation_token(user=user, address="off@example.com", mark=mark)
    get_user_model().objects.filter(pk=user.pk).update(is_active=False)
    assert Client().post(f"/account/address/{token}/").status_code == 404
    assert not get_user_model().objects.get(pk=user.pk).is_active


def test_staff_see_it_waiting_and_can_send_its_link_again(
    open_registration: Mailbox, admin_client: Client
) -> None:
    register("me@example.com")
    page = admin_client.get("/admin/people/").content.decode()
    row = page[page.index(">newcomer</a>") :]
    row = row[: row.index("</tr>")]
    assert "awaiting its address" in row
    assert "Send a confirmation" in row
    assert admin_client.post(f"/admin/people/{newcomer().pk}/confirmation/").status_code == 302
    Client().post(confirm_path(open_registration, 1))
    assert newcomer().is_active


def test_without_mail_a_new_account_works_at_once(settings: Any) -> None:
    settings.REGISTRATION = "open"
    fields = {"username": "newcomer", "password": PASSWORD, "password_again": PASSWORD}
    browser = Client()
    assert browser.post("/register/", fields).status_code == 302
    assert browser.get("/podcasts/").status_code == 200
    assert (
        "address"
        not in Client()
        .get("/register/")
        .content.decode()
        .lower()
        .split("<footer")[0]
        .split("<main")[1]
    )


def test_an_awaiting_account_staff_decide_on_is_theirs(
    open_registration: Mailbox, admin_client: Client, clock: Clock
) -> None:
    """Turned on, then off, it is never removed; turned off, its link does not turn it on."""
    register("me@example.com")
    path = confirm_path(open_registration)
    user = newcomer()
    assert admin_client.post(f"/admin/people/{user.pk}/on/").status_code == 302
    assert (
        admin_client.post(f"/admin/people/{user.pk}/off/", {"confirmed": "yes"}).status_code == 302
    )
    assert not AwaitingConfirmation.objects.exists()
    assert Client().post(path).status_code == 404
    assert not newcomer().is_active
    clock.advance(days=5)
    assert services.mail_sweep()["registrations_removed"] == 0
    assert get_user_model().objects.filter(username="newcomer").exists()
