"""What staff or a deletion did while a request of the account was under way is never written
over, and nothing of a deleted or deactivated account is made (docs/api.md, "Deleting an
account"): its password, its app passwords, a login flow it allows, a device's caption."""

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from accounts.models import AppPassword
from accounts.services import app_password_create
from core.exceptions import NotAuthorized
from gpodder.models import Device
from gpodder.services import device_touch, device_update
from nextcloud import flows
from nextcloud.models import LoginFlow
from tests.factories import UserFactory
from web.views import account as views

PASSWORD = "a long and unusual passphrase 7"
NEW = "another long and unusual passphrase 8"


def staff_acts_while_the_password_is_checked(
    monkeypatch: pytest.MonkeyPatch, act: Callable[[], object]
) -> None:
    """Staff's change commits after the page read the account and checked the old password
    (about a second of hashing), before the new one is written."""
    checked = views.password_form_status

    def then_staff(*args: Any, **kwargs: Any) -> int:
        status = checked(*args, **kwargs)
        act()
        return status

    monkeypatch.setattr(views, "password_form_status", then_staff)


def change_password(client: Client) -> Any:
    return client.post(
        "/account/password/",
        {"old_password": PASSWORD, "new_password1": NEW, "new_password2": NEW},
    )


@pytest.fixture
def member(db: None) -> Any:
    return UserFactory(username="member", with_password=PASSWORD)


@pytest.fixture
def signed_in(member: Any) -> Client:
    client = Client()
    client.force_login(member)
    return client


def test_a_password_change_never_puts_back_a_deactivated_account(
    member: Any, signed_in: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    users = get_user_model().objects
    staff_acts_while_the_password_is_checked(
        monkeypatch, lambda: users.filter(pk=member.pk).update(is_active=False)
    )
    response = change_password(signed_in)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")
    stored = users.get(pk=member.pk)
    assert stored.is_active is False
    assert stored.check_password(PASSWORD)


def test_a_password_change_writes_the_password_alone(
    member: Any, signed_in: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Staff renamed and demoted the account meanwhile: both stand, with the new password."""
    users = get_user_model().objects
    users.filter(pk=member.pk).update(is_staff=True)
    member.refresh_from_db()
    staff_acts_while_the_password_is_checked(
        monkeypatch,
        lambda: users.filter(pk=member.pk).update(username="renamed", is_staff=False),
    )
    assert change_password(signed_in).status_code == 302
    stored = users.get(pk=member.pk)
    assert (stored.username, stored.is_staff) == ("renamed", False)
    assert stored.check_password(NEW)


def test_a_password_change_never_brings_a_deleted_account_back(
    member: Any, signed_in: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    users = get_user_model().objects
    staff_acts_while_the_password_is_checked(
        monkeypatch, lambda: users.filter(pk=member.pk).delete()
    )
    response = change_password(signed_in)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")
    assert not users.filter(pk=member.pk).exists()


@pytest.mark.parametrize("gone", ["deleted", "deactivated"])
def test_nothing_is_made_for_an_account_gone_since_it_was_read(member: Any, gone: str) -> None:
    """The request's user object was read before; the account went before its write."""
    device_touch(user=member, device_id="phone")
    token = flows.login_flow_start(client_name="AntennaPod/3.5.0").login_token
    users = get_user_model().objects.filter(pk=member.pk)
    if gone == "deleted":
        users.delete()
    else:
        users.update(is_active=False)

    with pytest.raises(NotAuthorized):
        app_password_create(user=member, name="Kasts")
    assert not AppPassword.objects.filter(user_id=member.pk).exists()

    with pytest.raises(NotAuthorized):
        flows.login_flow_grant(login_token=token, user=member)
    assert LoginFlow.objects.get().user_id is None

    if gone == "deactivated":  # a deleted account's devices went with it
        with pytest.raises(NotAuthorized):
            device_update(user=member, device_id="phone", caption="Renamed")
        assert Device.objects.get(user_id=member.pk).caption != "Renamed"
