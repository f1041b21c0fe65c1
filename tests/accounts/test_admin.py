"""The user admin without what the service does not use: no groups, no per-user permissions, and
a password shown as set or not, never by its hash's parameters."""

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.factories import UserFactory

PASSWORD = "a long and unusual passphrase 42"


@pytest.fixture
def admin_client(db: None) -> Client:
    staff: Any = UserFactory(username="staff", is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(staff)
    return client


@pytest.fixture
def alice(db: None) -> Any:
    return UserFactory(username="alice", with_password=PASSWORD)


def test_groups_are_gone(admin_client):
    index = admin_client.get("/admin/").content.decode()
    assert "/admin/auth/group/" not in index
    assert "Groups" not in index
    assert admin_client.get("/admin/auth/group/").status_code == 404
    users = admin_client.get("/admin/auth/user/")
    assert "groups__id__exact" not in users.content.decode()


def test_the_user_page_has_no_permission_pickers_but_keeps_the_flags(admin_client, alice):
    response = admin_client.get(f"/admin/auth/user/{alice.pk}/change/")
    body = response.content.decode()
    fields = set(response.context["adminform"].form.fields)
    assert not {"groups", "user_permissions"} & fields
    assert {"is_active", "is_staff", "is_superuser"} <= fields
    # The dates are the service's, shown as text.
    assert not {"last_login", "date_joined"} & fields
    assert "Date joined" in body
    assert 'name="groups"' not in body
    assert 'name="user_permissions"' not in body
    assert "SelectFilter" not in body  # the two-box pickers' script


def test_the_password_is_shown_as_set_with_the_link_to_change_it(admin_client, alice):
    body = admin_client.get(f"/admin/auth/user/{alice.pk}/change/").content.decode()
    assert "<strong>Set</strong>" in body
    assert 'href="../password/"' in body
    for detail in ("argon2", "algorithm", "memory cost", "time cost", "parallelism", "salt"):
        assert detail not in body.lower(), detail
    assert alice.password[-12:] not in body


def test_an_account_without_a_password_says_so(admin_client, db):
    nobody: Any = UserFactory(username="nopass")  # unusable password
    body = admin_client.get(f"/admin/auth/user/{nobody.pk}/change/").content.decode()
    assert "No password set." in body
    assert "Set password" in body


def test_the_flags_are_still_changed_from_the_user_page(admin_client, alice):
    response = admin_client.post(
        f"/admin/auth/user/{alice.pk}/change/",
        {
            "username": "alice",
            "email": "alice@example.net",
            "is_active": "on",
            "is_staff": "on",
        },
    )
    assert response.status_code == 302, response.content[:2000]
    alice = get_user_model().objects.get(pk=alice.pk)
    assert alice.is_staff
    assert not alice.is_superuser
    assert alice.email == "alice@example.net"
    assert alice.check_password(PASSWORD), "the change form leaves the password alone"
