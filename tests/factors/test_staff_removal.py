"""Staff's People page: each account's kinds of second factor, and their removal for a person
who lost theirs, asked first, never one's own, never by staff without the right to change
accounts; the list still read in its bounded number of queries."""

from typing import Any

from django.test import Client
from django_otp_webauthn.models import WebAuthnCredential

from factors import selectors, services
from tests.factories import UserFactory
from tests.helpers import totp_code
from tests.staff.test_people import PEOPLE, staff_with


def _with_app(user: Any) -> None:
    device = services.app_begin(user=user)
    services.app_confirm(user=user, device_id=device.pk, code=totp_code(device))


def test_the_list_names_each_accounts_factors(
    admin_client: Client, alice: Any, django_assert_max_num_queries: Any
) -> None:
    _with_app(alice)
    WebAuthnCredential.objects.create(user=alice, name="Phone", confirmed=True)
    with django_assert_max_num_queries(6):
        listed = admin_client.get(PEOPLE).content.decode()
    row = listed[listed.index(">alice<") :].split("</tr>")[0]
    assert "authenticator app" in row
    assert "passkey" in row
    assert "Remove factors…" in row


def test_removal_is_asked_first_then_takes_every_factor(admin_client: Client, alice: Any) -> None:
    _with_app(alice)
    path = f"{PEOPLE}{alice.pk}/factors/"
    assert "Remove the second factors of" in admin_client.get(path).content.decode()
    admin_client.post(path)  # not from the question: asked again
    assert selectors.has_factors(user=alice)
    done = admin_client.post(path, {"confirmed": "yes"}, follow=True)
    assert "The second factors of alice are removed (1)" in done.content.decode()
    assert not selectors.has_factors(user=alice)
    assert selectors.factors_of(user=alice).recovery_left is None


def test_staff_remove_no_factor_of_their_own(admin_client: Client, staff: Any) -> None:
    _with_app(staff)
    done = admin_client.post(f"{PEOPLE}{staff.pk}/factors/", {"confirmed": "yes"}, follow=True)
    assert "Your own factors are removed on your Account page" in done.content.decode()
    assert selectors.has_factors(user=staff)


def test_staff_who_may_not_change_accounts_remove_nothing(db: None) -> None:
    person: Any = UserFactory()
    _with_app(person)
    viewer = staff_with("view_user")
    answer = viewer.post(f"{PEOPLE}{person.pk}/factors/", {"confirmed": "yes"})
    assert answer.status_code == 403
    assert selectors.has_factors(user=person)
