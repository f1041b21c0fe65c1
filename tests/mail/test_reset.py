"""A forgotten password reset by a link mailed to the account's address (docs/public-instance.md,
"Password reset"): mail through a real SMTP server, a link that works once and dies with any
change of the account, and an answer that tells nobody whether an address has an account."""

import threading
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import PasswordResetTokenGenerator
from django.db import connection
from django.test import Client
from django.utils import timezone

from accounts import addresses
from accounts.throttles import MailThrottle
from mail.models import Mail
from tests.conftest import MAIL_SITE
from tests.factories import UserFactory
from tests.mailserver import Mailbox, body, links
from tests.web.helpers import PASSWORD

# Real commits: the mail goes out after the commit of the request that asked for it, as deployed.
pytestmark = pytest.mark.django_db(transaction=True)

NEW = "a brand new passphrase for 2026"
FORGOTTEN = "/login/reset/"


def ask(address: str, client: Client | None = None, source: str = "127.0.0.1") -> Any:
    """Ask for a reset link to `address`, from the network `source`."""
    return (client or Client()).post(FORGOTTEN, {"address": address}, REMOTE_ADDR=source)


def link_path(message: Any, index: int = 0) -> str:
    link = links(message)[index]
    assert link.startswith(MAIL_SITE + "/login/reset/"), link
    return urlsplit(link).path


def password_of(user: Any, password: str) -> bool:
    return bool(get_user_model().objects.get(pk=user.pk).check_password(password))


@pytest.fixture
def alice(db: None) -> Any:
    return UserFactory(username="alice", email="Alice@Example.com", with_password=PASSWORD)


def test_a_reset_from_the_mail_to_a_new_password(mailbox: Mailbox, alice: Any) -> None:
    answer = ask("alice@example.COM")

    assert answer.status_code == 200
    assert "Check your mail" in answer.content.decode()
    (message,) = mailbox.wait_for(1)
    assert message["To"] == "Alice@Example.com"  # as the account holds it, not as typed
    assert message["From"] == "Podcast sync <noreply@sync.example.test>"
    assert "choose a new password" in message["Subject"]
    assert "alice:" in body(message)
    assert "Choose a new password for alice" in body(message, "html")
    path = link_path(message)
    assert path in body(message, "html")

    browser = Client()
    form = browser.get(path)
    assert form.status_code == 200
    assert "no-store" in form["Cache-Control"]
    assert "<strong>alice</strong>" in form.content.decode()
    done = browser.post(path, {"password": NEW, "password_again": NEW})

    assert done.status_code == 302
    assert done["Location"] == "/login/"
    assert password_of(alice, NEW)
    assert browser.get("/podcasts/").status_code == 302  # it signs nobody in
    signed = browser.post("/login/", {"username": "alice", "password": NEW})
    assert signed.status_code == 302
    # Used once, the link is dead.
    again = Client().post(
        path,
        {"password": "yet another passphrase 99", "password_again": "yet another passphrase 99"},
    )
    assert again.status_code == 404
    assert "This link does not work" in again.content.decode()
    assert password_of(alice, NEW)
    assert Mail.objects.get().state == Mail.State.SENT


def test_an_unknown_address_gets_the_same_answer_and_no_mail(mailbox: Mailbox, alice: Any) -> None:
    known = ask("alice@example.com")
    unknown = ask("nobody@example.com")

    assert unknown.status_code == known.status_code == 200
    assert known.content.decode().replace(
        "alice@example.com", "X"
    ) == unknown.content.decode().replace("nobody@example.com", "X")
    mailbox.wait_for(1)
    states = dict(Mail.objects.values_list("address", "state"))
    assert states == {"alice@example.com": Mail.State.SENT, "nobody@example.com": Mail.State.NONE}
    assert len(mailbox.received) == 1


@pytest.mark.parametrize(
    "account",
    [
        {"is_active": False, "with_password": PASSWORD},
        {"is_active": True},  # no password of its own: staff give it one
    ],
    ids=["turned off", "no usable password"],
)
def test_no_link_goes_to_an_account_that_cannot_sign_in(
    mailbox: Mailbox, db: None, account: dict[str, Any]
) -> None:
    UserFactory(username="carol", email="carol@example.com", **account)
    assert ask("carol@example.com").status_code == 200
    assert Mail.objects.get().state == Mail.State.NONE
    assert mailbox.received == []


def test_two_accounts_of_one_address_get_one_mail_with_a_link_each(
    mailbox: Mailbox, alice: Any
) -> None:
    UserFactory(username="alice-work", email="Alice@Example.com", with_password=PASSWORD)
    ask("alice@example.com")
    (message,) = mailbox.wait_for(1)
    text = body(message)
    assert "alice:" in text
    assert "alice-work:" in text
    assert len(links(message)) == 2


def test_a_lookalike_address_never_receives_anothers_link(mailbox: Mailbox, db: None) -> None:
    """The Kelvin sign folds to k: such an address is refused as one no mail server takes, and
    a link only ever goes to the address the account holds, as it holds it."""
    UserFactory(username="kay", email="kelvin@example.com", with_password=PASSWORD)
    assert ask("\u212aelvin@example.com").status_code == 400
    assert not Mail.objects.exists()
    assert ask("KELVIN@example.com").status_code == 200
    (message,) = mailbox.wait_for(1)
    assert message["X-Envelope-To"] == "kelvin@example.com"


def test_a_link_dies_with_a_sign_in_a_password_change_or_its_age(
    mailbox: Mailbox, alice: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    ask("alice@example.com")
    signed_in_since = link_path(mailbox.wait_for(1)[0])
    assert Client().post("/login/", {"username": "alice", "password": PASSWORD}).status_code == 302
    assert Client().get(signed_in_since).status_code == 404

    ask("alice@example.com")
    changed_since = link_path(mailbox.wait_for(2)[1])
    alice.refresh_from_db()
    alice.set_password("changed by staff meanwhile 1")
    alice.save()
    assert Client().get(changed_since).status_code == 404

    ask("alice@example.com")
    too_old = link_path(mailbox.wait_for(3)[2])
    later = timezone.now() + timedelta(hours=2, minutes=1)
    monkeypatch.setattr(
        PasswordResetTokenGenerator, "_now", lambda self: later.replace(tzinfo=None)
    )
    answer = Client().post(too_old, {"password": NEW, "password_again": NEW})
    assert answer.status_code == 404
    assert not password_of(alice, NEW)


def test_a_turned_off_account_cannot_use_its_link(mailbox: Mailbox, alice: Any) -> None:
    ask("alice@example.com")
    path = link_path(mailbox.wait_for(1)[0])
    get_user_model().objects.filter(pk=alice.pk).update(is_active=False)
    assert Client().post(path, {"password": NEW, "password_again": NEW}).status_code == 404
    assert password_of(alice, PASSWORD)


@pytest.mark.parametrize(
    "path",
    [
        "/login/reset/MQ/forged-token/",
        "/login/reset/!!!/abc-def/",
        "/login/reset/OTk5OTk5OTk5OTk5OTk5OTk5OTk5OTk5OQ/abc-def/",  # a huge account id
        "/login/reset/LTE/abc-def/",  # -1
        "/login/reset/%00/abc/",
        "/login/reset/" + "A" * 5000 + "/" + "b" * 5000 + "/",
    ],
)
def test_a_forged_link_changes_nothing(alice: Any, path: str) -> None:
    answer = Client().post(path, {"password": NEW, "password_again": NEW})
    assert answer.status_code == 404
    assert "This link does not work" in answer.content.decode()
    assert password_of(alice, PASSWORD)


def test_anothers_token_does_not_open_an_account(alice: Any) -> None:
    bob = UserFactory(username="bob", email="bob@example.com", with_password=PASSWORD)
    _, token = addresses.reset_link_parts(bob)
    uid, _ = addresses.reset_link_parts(alice)
    assert Client().get(f"/login/reset/{uid}/{token}/").status_code == 404


def test_the_new_password_is_checked_as_any_other(alice: Any) -> None:
    uid, token = addresses.reset_link_parts(alice)
    path = f"/login/reset/{uid}/{token}/"
    weak = Client().post(path, {"password": "alice123", "password_again": "alice123"})
    assert weak.status_code == 400
    assert "too similar" in weak.content.decode() or "too common" in weak.content.decode()
    differ = Client().post(path, {"password": NEW, "password_again": NEW + "x"})
    assert differ.status_code == 400
    assert "The two passwords differ" in differ.content.decode()
    assert password_of(alice, PASSWORD)
    # Refused, the link still works.
    assert Client().post(path, {"password": NEW, "password_again": NEW}).status_code == 302


def test_one_link_used_twice_at_once_sets_one_password(db: None) -> None:
    alice = UserFactory(username="alice", email="alice@example.com", with_password=PASSWORD)
    uid, token = addresses.reset_link_parts(alice)
    path = f"/login/reset/{uid}/{token}/"
    answers: list[int] = []
    start = threading.Barrier(2)

    def use(password: str) -> None:
        start.wait()
        # Each thread its own connection, closed after: two transactions that race for the lock.
        try:
            answer = Client().post(path, {"password": password, "password_again": password})
            answers.append(answer.status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=use, args=(f"{NEW} {n}",)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(answers) == [302, 404]
    assert password_of(alice, f"{NEW} 0") != password_of(alice, f"{NEW} 1")


@pytest.mark.parametrize(
    ("typed", "problem"),
    [
        ("not an address", "Enter an email address"),
        ("a\x00b@example.com", "Null characters are not allowed"),
        ('"a\x01b"@example.com', "Enter an email address"),
        ("a" * 300 + "@example.com", "at most 254 characters"),
        ("", "Type the email address of your account"),
    ],
    ids=["words", "NUL", "control character", "huge", "empty"],
)
def test_what_is_not_an_address_is_named_and_sends_nothing(
    mailbox: Mailbox, db: None, typed: str, problem: str
) -> None:
    answer = ask(typed)
    assert answer.status_code == 400
    assert problem in answer.content.decode()
    assert not Mail.objects.exists()


def test_a_unicode_address_is_mailed(mailbox: Mailbox, db: None) -> None:
    UserFactory(username="zoë", email="zoe@bücher.example", with_password=PASSWORD)
    assert ask("zoe@BÜCHER.example").status_code == 200
    (message,) = mailbox.wait_for(1)
    assert "zoë:" in body(message)


def test_mail_asked_for_is_throttled_per_network_and_per_address(
    mailbox: Mailbox, alice: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(MailThrottle, "THROTTLE_RATES", {"mail": "3/hour"})
    for n in range(3):
        assert ask(f"someone{n}@example.com").status_code == 200
    from_here = ask("alice@example.com")
    assert from_here.status_code == 429
    assert "mail sent per address" in from_here.content.decode()

    for n in range(3):
        assert ask("alice@example.com", source=f"192.0.2.{n + 1}").status_code == 200
    to_her = ask("alice@example.com", source="198.51.100.7")
    assert to_her.status_code == 429
    assert Mail.objects.filter(address="alice@example.com").count() == 3


def test_the_forms_need_their_csrf_token(mailbox: Mailbox, alice: Any) -> None:
    browser = Client(enforce_csrf_checks=True)
    assert ask("alice@example.com", browser).status_code == 403
    uid, token = addresses.reset_link_parts(alice)
    path = f"/login/reset/{uid}/{token}/"
    assert browser.post(path, {"password": NEW, "password_again": NEW}).status_code == 403
    assert not Mail.objects.exists()
    assert password_of(alice, PASSWORD)


def test_without_mail_the_page_says_what_staff_can_do(alice: Any) -> None:
    page = Client().get(FORGOTTEN)
    assert page.status_code == 200
    text = page.content.decode()
    assert "This server sends no mail" in text
    assert "one-time password" in text
    assert ask("alice@example.com").status_code == 200
    assert not Mail.objects.exists()


def test_the_sign_in_page_offers_the_reset(db: None) -> None:
    assert 'href="/login/reset/"' in Client().get("/login/").content.decode()
