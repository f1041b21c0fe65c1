"""The user admin (docs/operations.md, "The admin"): staff make accounts, deactivate and
activate them and set their passwords; and none of what the service does not use: no groups, no
per-user permissions, and a password shown as set or not, never by its hash's parameters."""

from typing import Any

import pytest
from django.contrib.auth import get_user_model

from tests.factories import UserFactory

PASSWORD = "a long and unusual passphrase 42"


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


def test_staff_create_accounts_that_log_in_with_argon2(admin_client, anon):
    password = "a long and unusual passphrase 42"

    response = admin_client.post(
        "/admin/auth/user/add/",
        {
            "username": "newcomer",
            "password1": password,
            "password2": password,
            "usable_password": "true",
        },
    )

    assert response.status_code == 302, response.content[:1000]
    user = get_user_model().objects.get(username="newcomer")
    assert user.password.startswith("argon2")
    login = anon.post(
        "/v1/auth/login", {"username": "newcomer", "password": password}, format="json"
    )
    assert login.status_code == 200, login.content


def test_deactivate_action_stops_the_users_tokens(admin_client, staff, anon):
    user: Any = UserFactory(username="leaver", with_password="a long and unusual passphrase 42")
    login = anon.post(
        "/v1/auth/login",
        {"username": "leaver", "password": "a long and unusual passphrase 42"},
        format="json",
    ).json()

    anon.credentials(HTTP_AUTHORIZATION=f"Bearer {login['access_token']}")
    assert anon.get("/v1/subscriptions").status_code == 200  # the user is now remembered
    anon.credentials()

    response = admin_client.post(
        "/admin/auth/user/",
        {"action": "deactivate", "_selected_action": [user.pk, staff.pk]},
        follow=True,
    )

    assert "Deactivated 1 user(s)." in response.content.decode()
    assert "You were left active: staff cannot deactivate themselves." in response.content.decode()
    user.refresh_from_db()
    staff.refresh_from_db()
    assert not user.is_active
    assert staff.is_active  # never oneself
    anon.credentials(HTTP_AUTHORIZATION=f"Bearer {login['access_token']}")
    assert anon.get("/v1/subscriptions").status_code == 401
    anon.credentials()
    refresh = anon.post(
        "/v1/auth/refresh", {"refresh_token": login["refresh_token"]}, format="json"
    )
    assert refresh.status_code == 401


def test_activate_action_lets_a_deactivated_user_log_in_again(admin_client, anon):
    user: Any = UserFactory(username="returning", with_password="a long and unusual passphrase 9")
    type(user).objects.filter(pk=user.pk).update(is_active=False)

    response = admin_client.post(
        "/admin/auth/user/", {"action": "activate", "_selected_action": [user.pk]}, follow=True
    )

    assert "Activated 1 user(s)." in response.content.decode()
    login = anon.post(
        "/v1/auth/login",
        {"username": "returning", "password": "a long and unusual passphrase 9"},
        format="json",
    )
    assert login.status_code == 200


def test_staff_reset_a_users_password(admin_client, anon):
    user: Any = UserFactory(username="forgetful", with_password="the old passphrase that was lost")
    password = "a brand new and unusual passphrase 7"

    response = admin_client.post(
        f"/admin/auth/user/{user.pk}/password/",
        {"password1": password, "password2": password, "usable_password": "true"},
    )

    assert response.status_code == 302, response.content[:1000]
    login = anon.post(
        "/v1/auth/login", {"username": "forgetful", "password": password}, format="json"
    )
    assert login.status_code == 200
