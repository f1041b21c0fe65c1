"""The account page: app passwords made, shown once, used and revoked; and deleting the account
after the password, with the deletion's status page."""

import re
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.test import APIClient

from deletions.models import AccountDeletion
from gpodder.services import device_touch
from subscriptions.models import Subscription
from tests.episodes.helpers import upload_actions
from tests.factories import UserFactory
from tests.helpers import subscribe
from tests.web.helpers import PASSWORD


def made_secret(page: Client, name: str) -> str:
    response = page.post("/account/app-passwords/", {"name": name})
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"] or "no-cache" in response["Cache-Control"]
    found = re.search(r'<code class="password">([^<]+)</code>', response.content.decode())
    assert found, response.content.decode()
    return found.group(1)


def test_an_app_password_is_shown_once_listed_and_works_for_apps(page: Client, person: Any) -> None:
    secret = made_secret(page, "AntennaPod on my phone")
    listed = page.get("/account/").content.decode()
    assert "AntennaPod on my phone" in listed
    assert secret not in listed  # shown once
    assert "never" in listed

    api = APIClient()
    login = api.post("/v1/auth/login", {"username": "alice", "password": secret}, format="json")
    assert login.status_code == 200
    basic = Client().get(
        "/api/2/devices/alice.json",
        headers={"authorization": _basic("alice", secret)},
    )
    assert basic.status_code == 200
    assert "never" not in page.get("/account/").content.decode()


def _basic(username: str, password: str) -> str:
    import base64

    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


def test_an_app_password_does_not_sign_in_to_the_pages(client: Client, page: Client) -> None:
    secret = made_secret(page, "an app")
    response = client.post("/login/", {"username": "alice", "password": secret})
    assert response.status_code == 200
    assert client.get("/podcasts/").status_code == 302


def test_revoking_ends_the_apps_tokens_and_sessions_at_once(page: Client, person: Any) -> None:
    secret = made_secret(page, "Kasts")
    token = (
        APIClient()
        .post("/v1/auth/login", {"username": "alice", "password": secret}, format="json")
        .json()["access_token"]
    )
    app = Client()
    assert (
        app.get(
            "/api/2/devices/alice.json", headers={"authorization": _basic("alice", secret)}
        ).status_code
        == 200
    )
    bearer = APIClient()
    bearer.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert bearer.get("/v1/subscriptions").status_code == 200

    (listed,) = re.findall(
        r"/account/app-passwords/(\d+)/revoke/", page.get("/account/").content.decode()
    )
    # In use: it asks first (tests/web/test_device_diagnostics.py), then revokes.
    response = page.post(f"/account/app-passwords/{listed}/revoke/", {"confirmed": "yes"})
    assert response["Location"] == "/account/"
    assert "“Kasts” is revoked" in page.get("/account/").content.decode()
    assert "Kasts" not in page.get("/account/").content.decode()

    assert bearer.get("/v1/subscriptions").status_code == 401
    assert app.get("/api/2/devices/alice.json").status_code == 401  # its cookie alone
    assert (
        app.get(
            "/api/2/devices/alice.json", headers={"authorization": _basic("alice", secret)}
        ).status_code
        == 401
    )
    # The account's own password still works.
    assert (
        Client()
        .get("/api/2/devices/alice.json", headers={"authorization": _basic("alice", PASSWORD)})
        .status_code
        == 200
    )


def test_another_persons_app_password_cannot_be_revoked(
    page: Client, person: Any, stranger: Any
) -> None:
    theirs = Client()
    theirs.force_login(stranger)
    made_secret(theirs, "theirs")
    (their_id,) = re.findall(
        r"/app-passwords/(\d+)/revoke/", theirs.get("/account/").content.decode()
    )
    assert page.post(f"/account/app-passwords/{their_id}/revoke/").status_code == 404
    assert page.post("/account/app-passwords/99999999/revoke/").status_code == 404
    assert "theirs" in theirs.get("/account/").content.decode()


@pytest.mark.parametrize(
    ("name", "told"),
    [
        ("", "This field is required."),
        ("   ", "This field is required."),
        ("x" * 101, "at most 100 characters"),
        ("tab\there", "control characters"),
    ],
)
def test_a_bad_app_password_name_is_told(page: Client, name: str, told: str) -> None:
    response = page.post("/account/app-passwords/", {"name": name})
    assert response.status_code == 400
    assert told in response.content.decode()
    assert '<code class="password">' not in response.content.decode()


def test_two_app_passwords_cannot_share_a_name(page: Client) -> None:
    made_secret(page, "Phone 📱")
    response = page.post("/account/app-passwords/", {"name": "Phone 📱"})
    assert response.status_code == 400
    assert "already" in response.content.decode()


def test_deleting_the_account_asks_for_the_password(page: Client, person: Any) -> None:
    subscribe(person, "https://a.example/feed")
    response = page.post("/account/delete/", {"password": "not it"})
    assert response.status_code == 400
    assert "That is not your password." in response.content.decode()
    assert get_user_model().objects.filter(pk=person.pk, is_active=True).exists()
    secret = made_secret(page, "an app")
    refused = page.post("/account/delete/", {"password": secret})
    assert refused.status_code == 400  # an app password cannot delete the account
    assert not AccountDeletion.objects.exists()


def test_deleting_the_account_removes_everything_and_shows_the_status(
    page: Client, person: Any, stranger: Any, django_capture_on_commit_callbacks: Any
) -> None:
    subscribe(person, "https://a.example/feed")
    device_touch(user=person, device_id="phone")
    upload_actions(
        person, [{"podcast": "https://a.example/feed", "episode": "https://e/1", "action": "new"}]
    )
    subscribe(stranger, "https://a.example/feed")

    with django_capture_on_commit_callbacks(execute=True):
        response = page.post("/account/delete/", {"password": PASSWORD})
    deletion = AccountDeletion.objects.get()
    assert response["Location"] == f"/account/deleted/{deletion.key}/"
    # The task ran in-process, after the commit: the deletion has ended.
    status = Client().get(response["Location"])
    assert status.status_code == 200
    body = status.content.decode()
    assert "alice" in body
    assert "Success" in body
    assert not get_user_model().objects.filter(username="alice").exists()
    assert Subscription.objects.filter(user=stranger).count() == 1
    assert page.get("/podcasts/").status_code == 302  # signed out


def test_an_unknown_account_deletion_key_is_not_found(client: Client, db: None) -> None:
    assert client.get("/account/deleted/6a1e3c0e-8c8a-4f5e-9d7e-3f1f5b0f9a11/").status_code == 404
    assert client.get("/account/deleted/not-a-key/").status_code == 404


def test_the_only_staff_account_cannot_delete_itself(page: Client, person: Any) -> None:
    type(person).objects.filter(pk=person.pk).update(is_staff=True)
    response = page.post("/account/delete/", {"password": PASSWORD})
    assert response.status_code == 400
    assert "only staff account" in response.content.decode()
    assert not AccountDeletion.objects.exists()
    person.refresh_from_db()
    assert person.is_active
    UserFactory(username="another", is_staff=True)
    assert page.post("/account/delete/", {"password": PASSWORD}).status_code == 302


def test_the_account_page_never_scrolls_a_new_app_password_away(page: Client) -> None:
    made = page.post("/account/app-passwords/", {"name": "app"}).content.decode()
    assert "autofocus" not in made
