"""An account's email address on the Account page (docs/public-instance.md, "Email address"):
with mail, a new address is the account's once the link mailed to it is opened, and each link
confirms once; without, it is written as typed. The password is asked again, and counted like a
sign-in."""

import base64
import time
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.core import signing
from django.test import Client

from accounts import addresses, services
from accounts.models import ConfirmedAddress
from accounts.throttles import LoginThrottle, MailThrottle
from mail.models import Mail
from tests.conftest import MAIL_SITE
from tests.factories import UserFactory
from tests.mailserver import Mailbox, body, links
from tests.web.helpers import PASSWORD

pytestmark = pytest.mark.django_db(transaction=True)

ADDRESS = "/account/address/"


@pytest.fixture
def alice(db: None) -> Any:
    return UserFactory(username="alice", email="old@example.com", with_password=PASSWORD)


def signed_in(username: str = "alice") -> Client:
    browser = Client()
    assert browser.post("/login/", {"username": username, "password": PASSWORD}).status_code == 302
    return browser


def change(browser: Client, address: str, password: str = PASSWORD) -> Any:
    return browser.post(ADDRESS, {"address": address, "password": password})


def email_of(user: Any) -> str:
    return str(get_user_model().objects.get(pk=user.pk).email)


def confirm_path(message: Any) -> str:
    (link,) = links(message)
    assert link.startswith(MAIL_SITE + "/account/address/"), link
    return urlsplit(link).path


def test_a_new_address_is_the_accounts_once_its_link_is_opened(
    mailbox: Mailbox, alice: Any
) -> None:
    browser = signed_in()
    answer = change(browser, "New@Example.COM")
    assert answer.status_code == 302
    assert "A link is on its way to New@example.com" in browser.get("/account/").content.decode()
    assert email_of(alice) == "old@example.com"  # not before it is confirmed

    (message,) = mailbox.wait_for(1)
    assert message["To"] == "New@example.com"
    assert "confirm your address" in message["Subject"]
    assert "New@example.com" in body(message)
    assert "alice" in body(message)
    path = confirm_path(message)
    assert path in body(message, "html")

    # Opened anywhere, signed in or not: GET asks, and changes nothing.
    elsewhere = Client()
    asking = elsewhere.get(path)
    assert asking.status_code == 200
    assert (
        'Make <strong class="url">New@example.com</strong> the email address'
        in asking.content.decode()
    )
    assert email_of(alice) == "old@example.com"
    done = elsewhere.post(path)
    assert done.status_code == 302
    assert email_of(alice) == "New@example.com"
    assert addresses.address_confirmed(user=get_user_model().objects.get(pk=alice.pk))
    page = browser.get("/account/").content.decode()
    assert "New@example.com</strong>, confirmed" in page
    # Once only.
    assert elsewhere.post(path).status_code == 404
    assert Client().get(path).status_code == 404


def test_of_two_links_in_flight_the_first_confirmed_kills_the_other(
    mailbox: Mailbox, alice: Any
) -> None:
    browser = signed_in()
    change(browser, "one@example.com")
    change(browser, "two@example.com")
    first, second = (confirm_path(m) for m in mailbox.wait_for(2))
    assert Client().post(second).status_code == 302
    assert Client().post(first).status_code == 404
    assert email_of(alice) == "two@example.com"


def test_a_link_dies_with_a_password_change_or_its_age(
    mailbox: Mailbox, alice: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    browser = signed_in()
    change(browser, "new@example.com")
    stale = confirm_path(mailbox.wait_for(1)[0])
    services.password_set(user=alice, password="another long passphrase 31")
    assert Client().post(stale).status_code == 404
    assert email_of(alice) == "old@example.com"

    browser = Client()
    browser.post("/login/", {"username": "alice", "password": "another long passphrase 31"})
    change(browser, "new@example.com", "another long passphrase 31")
    old = confirm_path(mailbox.wait_for(2)[1])
    later = time.time() + 3 * 24 * 3600 + 60
    monkeypatch.setattr("django.core.signing.time.time", lambda: later)
    assert Client().post(old).status_code == 404
    assert email_of(alice) == "old@example.com"


def test_an_address_another_account_confirmed_is_not_taken(mailbox: Mailbox, alice: Any) -> None:
    bob: Any = UserFactory(username="bob", email="shared@example.com", with_password=PASSWORD)
    ConfirmedAddress.objects.create(
        user=bob,
        address="shared@example.com",
        key="shared@example.com",
        confirmed="2026-01-01T00:00Z",
    )
    change(signed_in(), "SHARED@example.com")
    answer = Client().post(confirm_path(mailbox.wait_for(1)[0]))
    assert answer.status_code == 409
    assert "This address is another account" in answer.content.decode()
    assert email_of(alice) == "old@example.com"
    assert email_of(bob) == "shared@example.com"


def test_a_wrong_password_changes_nothing_and_counts_like_a_sign_in(
    mailbox: Mailbox, alice: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(LoginThrottle, "THROTTLE_RATES", {"user": "1000/min", "login": "3/min"})
    browser = signed_in()
    for _ in range(3):
        wrong = change(browser, "new@example.com", "a guess")
        assert wrong.status_code == 400
        assert "That is not your password" in wrong.content.decode()
    right = change(browser, "new@example.com")
    assert right.status_code == 429
    assert "login attempts per address and username" in right.content.decode()
    assert not Mail.objects.exists()


def test_address_changes_are_throttled_per_account(
    mailbox: Mailbox, alice: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(MailThrottle, "THROTTLE_RATES", {"mail": "2/hour"})
    browser = signed_in()
    assert [change(browser, f"n{n}@example.com").status_code for n in range(3)] == [302, 302, 429]
    assert "mail sent per address" in change(browser, "x@example.com").content.decode()
    assert Mail.objects.count() == 2


@pytest.mark.parametrize(
    "typed", ["not an address", "a\x00b@example.com", '"a\x07"@example.com', "a" * 300 + "@x.com"]
)
def test_what_is_not_an_address_is_named_and_changes_nothing(
    mailbox: Mailbox, alice: Any, typed: str
) -> None:
    answer = change(signed_in(), typed)
    assert answer.status_code == 400
    assert not Mail.objects.exists()
    assert email_of(alice) == "old@example.com"


@pytest.mark.parametrize(
    "token",
    [
        "forged",
        "x" * 3000,
        signing.dumps({"user": 1, "address": "me@example.com", "mark": "0"}, salt="another.salt"),
        signing.dumps(["not", "a", "dict"], salt=addresses.CONFIRM_SALT),
        signing.dumps({"user": "1", "address": 5, "mark": None}, salt=addresses.CONFIRM_SALT),
    ],
    # Named, not by the tokens: a signed one holds the second it was made, and pytest-xdist's
    # workers, collecting in different seconds, must find the same tests.
    ids=["forged", "huge", "another-salt", "not-a-dict", "wrong-types"],
)
def test_a_forged_link_changes_nothing(alice: Any, token: str) -> None:
    answer = Client().post(f"/account/address/{token}/")
    assert answer.status_code == 404
    assert email_of(alice) == "old@example.com"


def test_an_app_password_cannot_change_the_address(mailbox: Mailbox, alice: Any) -> None:
    _, secret = services.app_password_create(user=alice, name="AntennaPod")
    basic = "Basic " + base64.b64encode(f"alice:{secret}".encode()).decode()
    app = Client(HTTP_AUTHORIZATION=basic)
    answer = app.post(ADDRESS, {"address": "thief@example.com", "password": secret})
    assert answer.status_code == 302
    assert answer["Location"].startswith("/login/")
    assert not Mail.objects.exists()


def test_the_address_form_needs_its_csrf_token(mailbox: Mailbox, alice: Any) -> None:
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(alice)
    assert change(browser, "new@example.com").status_code == 403
    assert not Mail.objects.exists()


def test_without_mail_the_address_is_written_as_typed_and_empty_removes_it(alice: Any) -> None:
    browser = signed_in()
    page = browser.get("/account/").content.decode()
    assert "This server sends no mail" in page
    assert "Save the address" in page
    assert change(browser, "Me@Example.org").status_code == 302
    assert email_of(alice) == "Me@example.org"
    assert "Your address is Me@example.org." in browser.get("/account/").content.decode()
    assert not Mail.objects.exists()
    assert change(browser, "").status_code == 302
    assert email_of(alice) == ""
    assert "Your account has no email address" in browser.get("/account/").content.decode()


def test_a_used_link_stays_dead_when_the_address_comes_back(mailbox: Mailbox, alice: Any) -> None:
    """Old → work → old again: the first link does not make work the address once more."""
    browser = signed_in()
    change(browser, "work@example.com")
    to_work = confirm_path(mailbox.wait_for(1)[0])
    assert Client().post(to_work).status_code == 302
    change(browser, "old@example.com")
    assert Client().post(confirm_path(mailbox.wait_for(2)[1])).status_code == 302
    assert Client().post(to_work).status_code == 404
    assert email_of(alice) == "old@example.com"


def test_a_link_asked_for_before_a_password_change_is_dead_whenever_it_is_sent(
    mailbox: Mailbox, alice: Any, clock: Any
) -> None:
    mailbox.refuse = "451 4.3.0 Try again later"
    change(signed_in(), "thief@example.com")
    services.password_set(user=alice, password="the owner's new passphrase 12")
    mailbox.refuse = ""
    clock.advance(minutes=2)
    from mail.services import mail_sweep

    mail_sweep()
    assert Client().post(confirm_path(mailbox.wait_for(1)[0])).status_code == 404
    assert email_of(alice) == "old@example.com"


def test_one_mailbox_is_not_filled_from_many_accounts(
    mailbox: Mailbox, db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(MailThrottle, "THROTTLE_RATES", {"mail": "2/hour"})
    statuses = []
    for n in range(3):
        UserFactory(username=f"sender{n}", with_password=PASSWORD)
        browser = signed_in(f"sender{n}")
        answer = browser.post(
            ADDRESS,
            {"address": "victim@example.com", "password": PASSWORD},
            REMOTE_ADDR=f"192.0.2.{n}",
        )
        statuses.append(answer.status_code)
    assert statuses == [302, 302, 429]
    assert Mail.objects.count() == 2


@pytest.mark.parametrize(
    "typed",
    [
        "\u017fam@example.com",
        "a@exa\u200bmple.com",
        "a@" + "\u00fc" * 63 + ".com",
        "\u212aelvin@example.com",
    ],
    ids=["long s", "zero-width space", "label too long for IDNA", "Kelvin sign"],
)
def test_an_address_no_mail_server_can_take_is_refused(
    mailbox: Mailbox, alice: Any, typed: str
) -> None:
    answer = change(signed_in(), typed)
    assert answer.status_code == 400
    assert "Enter an email address like someone@example.com" in answer.content.decode()
    assert not Mail.objects.exists()
