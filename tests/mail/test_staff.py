"""What staff see of the accounts' addresses on the People page, and the confirmation they can
send again (docs/operations.md, "The admin")."""

from typing import Any
from urllib.parse import urlsplit

import pytest
from django.test import Client

from accounts.models import ConfirmedAddress
from mail.models import Mail
from tests.factories import UserFactory
from tests.mailserver import Mailbox, links

pytestmark = pytest.mark.django_db(transaction=True)

PEOPLE = "/admin/people/"


@pytest.fixture
def accounts(db: None) -> dict[str, Any]:
    confirmed: Any = UserFactory(username="carol", email="carol@example.com")
    ConfirmedAddress.objects.create(
        user=confirmed,
        address="carol@example.com",
        key="carol@example.com",
        confirmed="2026-01-01T00:00Z",
    )
    return {
        "confirmed": confirmed,
        "unconfirmed": UserFactory(username="dave", email="Dave@example.com"),
        "none": UserFactory(username="erin", email=""),
    }


def row_of(page: str, username: str) -> str:
    start = page.index(f">{username}</a>")
    return page[start : page.index("</tr>", start)]


def test_each_accounts_address_and_its_state_are_listed(
    admin_client: Client, accounts: dict[str, Any]
) -> None:
    page = admin_client.get(PEOPLE).content.decode()
    assert 'carol@example.com</span> <span class="quiet">confirmed' in row_of(page, "carol")
    assert 'Dave@example.com</span> <span class="quiet">not confirmed' in row_of(page, "dave")
    assert "none" in row_of(page, "erin")
    # Without mail there is nothing to send.
    assert "Send a confirmation" not in page


def test_staff_send_an_unconfirmed_address_its_link_again(
    admin_client: Client, accounts: dict[str, Any], mailbox: Mailbox
) -> None:
    page = admin_client.get(PEOPLE).content.decode()
    assert "Send a confirmation" in row_of(page, "dave")
    assert "Send a confirmation" not in row_of(page, "carol")
    assert "Send a confirmation" not in row_of(page, "erin")

    dave = accounts["unconfirmed"]
    sent = admin_client.post(f"{PEOPLE}{dave.pk}/confirmation/")
    assert sent.status_code == 302
    assert (
        "A link to confirm Dave@example.com is on its way"
        in admin_client.get(PEOPLE).content.decode()
    )
    (message,) = mailbox.wait_for(1)
    assert message["To"] == "Dave@example.com"
    assert Client().post(urlsplit(links(message)[0]).path).status_code == 302
    assert 'Dave@example.com</span> <span class="quiet">confirmed' in row_of(
        admin_client.get(PEOPLE).content.decode(), "dave"
    )


@pytest.mark.parametrize("who", ["confirmed", "none"])
def test_nothing_is_sent_where_nothing_waits(
    admin_client: Client, accounts: dict[str, Any], mailbox: Mailbox, who: str
) -> None:
    answer = admin_client.post(f"{PEOPLE}{accounts[who].pk}/confirmation/", follow=True)
    assert "has no address waiting to be confirmed" in answer.content.decode()
    assert not Mail.objects.exists()


def test_without_mail_staff_are_told_so(admin_client: Client, accounts: dict[str, Any]) -> None:
    answer = admin_client.post(f"{PEOPLE}{accounts['unconfirmed'].pk}/confirmation/", follow=True)
    assert "This server sends no mail" in answer.content.decode()
    assert not Mail.objects.exists()


def test_only_staff_who_may_change_accounts_send_it(
    page: Client, accounts: dict[str, Any], mailbox: Mailbox
) -> None:
    answer = page.post(f"{PEOPLE}{accounts['unconfirmed'].pk}/confirmation/")
    assert answer.status_code == 302
    assert answer["Location"].startswith("/admin/login/")
    assert not Mail.objects.exists()


def test_a_get_or_an_unknown_account_changes_nothing(
    admin_client: Client, accounts: dict[str, Any], mailbox: Mailbox
) -> None:
    assert (
        admin_client.get(f"{PEOPLE}{accounts['unconfirmed'].pk}/confirmation/").status_code == 405
    )
    assert admin_client.post(f"{PEOPLE}999999/confirmation/").status_code == 404
    assert not Mail.objects.exists()
