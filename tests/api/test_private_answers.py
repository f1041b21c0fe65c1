"""Answers with someone's data are never kept by a cache (docs/operations.md, "In front of the
service"): every page, export and API answer says `Cache-Control: private, no-store`, or its
view's own stricter words."""

import base64
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from deletions import services as deletions
from gpodder import services as gpodder
from tests.factories import UserFactory
from tests.helpers import subscribe

PASSWORD = "a long and unusual passphrase for caches"


@pytest.fixture
def person(db: None) -> Any:
    return UserFactory(username="alice", with_password=PASSWORD)


def not_kept(response: Any) -> None:
    words = {word.strip() for word in response.get("Cache-Control", "").split(",")}
    assert {"private", "no-store"} <= words, (response.status_code, response.get("Cache-Control"))


def test_every_page_with_personal_data(person: Any) -> None:
    sub = subscribe(person, "https://example.com/feed")
    gpodder.device_touch(user=person, device_id="phone")
    deletion = deletions.deletion_request(user=person, guid=sub.guid)
    browser = Client()
    browser.post("/login/", {"username": "alice", "password": PASSWORD})
    for path in [
        "/podcasts/",
        f"/podcasts/{sub.guid}/",
        "/devices/",
        "/devices/phone/",
        "/history/",
        "/data/",
        "/data/subscriptions.opml",
        "/data/everything.json",
        f"/deletions/{deletion.pk}/",
        "/account/",
        "/login/",
    ]:
        response = browser.get(path)
        assert response.status_code in (200, 302), path
        not_kept(response)


def test_every_app_api_answer(person: Any) -> None:
    app = APIClient()
    app.credentials(
        HTTP_AUTHORIZATION="Basic " + base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    )
    answers = [
        app.post("/api/2/auth/alice/login.json"),
        app.get("/api/2/devices/alice.json"),
        app.get("/api/2/subscriptions/alice/phone.json?since=0"),
        app.post("/api/2/subscriptions/alice/phone.json", {"add": [], "remove": []}, "json"),
        app.get("/api/2/episodes/alice.json?since=0"),
        app.get("/subscriptions/alice.json"),
        app.get("/subscriptions/alice/phone.opml"),
        app.get("/subscriptions/alice/phone.txt"),
        APIClient().get("/api/2/devices/alice.json"),  # a 401 too
    ]
    for response in answers:
        not_kept(response)


def test_every_v1_answer(person: Any, api: APIClient) -> None:
    for response in [
        api.get("/v1/subscriptions"),
        api.get("/v1/subscriptions.opml"),
        APIClient().post(
            "/v1/auth/login", {"username": "alice", "password": PASSWORD}, format="json"
        ),
    ]:
        not_kept(response)
