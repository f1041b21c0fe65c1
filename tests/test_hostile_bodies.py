"""A corpus of hostile bodies against every endpoint that takes one (docs/api.md: "Errors",
"Limits").

Whatever arrives: never a 500; an error is always the error object; and a refused request
changes nothing stored, neither subscriptions, their history, deletions nor tokens.
"""

from typing import Any

import pytest
from rest_framework.test import APIClient
from rest_framework_simplejwt.token_blacklist.models import BlacklistedToken, OutstandingToken

from accounts.services import refresh_token_for
from deletions.models import Deletion
from subscriptions.models import Subscription, SubscriptionFeed, SubscriptionGuid
from tests.factories import UserFactory
from tests.helpers import assert_error, subscribe
from tests.hostile import CORPUS


@pytest.fixture
def world(user: Any, other_user: Any) -> dict[str, Any]:
    """Rows of two users, and a live refresh token, for a request to damage."""
    mine = subscribe(user, "https://example.com/mine")
    subscribe(other_user, "https://example.com/theirs")
    refresh = refresh_token_for(user)
    return {"guid": mine.guid, "refresh": str(refresh)}


def snapshot() -> list[Any]:
    return [
        list(model.objects.order_by("pk").values())
        for model in (
            Subscription,
            SubscriptionGuid,
            SubscriptionFeed,
            Deletion,
            OutstandingToken,
            BlacklistedToken,
        )
    ]


ENDPOINTS = {
    "add": ("post", "/v1/subscriptions"),
    "update": ("patch", "/v1/subscriptions/{guid}"),
    "delete": ("delete", "/v1/subscriptions/{guid}"),
    "login": ("post", "/v1/auth/login"),
    "refresh": ("post", "/v1/auth/refresh"),
    "logout": ("post", "/v1/auth/logout"),
    "opml import": ("post", "/v1/subscriptions.opml"),
}


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize("body", CORPUS.values(), ids=CORPUS.keys())
@pytest.mark.parametrize("content_type", ["application/json", "text/plain", "text/x-opml"])
def test_hostile_body_is_refused_with_the_error_object_and_changes_nothing(
    api: APIClient, world: dict[str, Any], endpoint: str, body: bytes, content_type: str
) -> None:
    method, path = ENDPOINTS[endpoint]
    before = snapshot()

    response = getattr(api, method)(
        path.format(guid=world["guid"]), data=body, content_type=content_type
    )

    assert response.status_code < 500, response.content[:300]
    if endpoint == "delete":
        # DELETE has no body to read: the deletion is requested whatever came with it.
        assert response.status_code == 202
        return
    if endpoint == "add" and response.status_code == 200:
        # A well-formed body with bad entries: each is a failure of its own, nothing stored.
        assert response.json()["success"] == []
        assert response.json()["failure"]
    else:
        assert_error(response, response.status_code)
        assert response.status_code in (401, 405, 413, 415)
    assert snapshot() == before


def test_the_corpus_bodies_fit_the_body_limit() -> None:
    """Each is refused for what it is, not for its size."""
    assert max(len(body) for body in CORPUS.values()) < 1024 * 1024


def test_a_user_cannot_be_chosen_by_the_body(api: APIClient, user: Any) -> None:
    """API3: the owner is always the token's user, whatever the body names."""
    other: Any = UserFactory()
    entry = {"feed_url": "https://example.com/chosen", "user": other.pk, "user_id": other.pk}

    response = api.post("/v1/subscriptions", {"subscriptions": [entry]}, format="json")

    assert response.status_code == 200
    [sub] = Subscription.objects.filter(feed_url="https://example.com/chosen")
    assert sub.user_id == user.pk
