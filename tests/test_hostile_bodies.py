"""A corpus of hostile bodies against every endpoint that takes one (docs/api.md: "Errors",
"Limits").

Whatever arrives: never a 500; an error is always the error object; and a refused request
changes nothing stored, neither subscriptions, their history, deletions nor tokens.
"""

import json
from typing import Any

import pytest
from rest_framework.test import APIClient
from rest_framework_simplejwt.token_blacklist.models import BlacklistedToken, OutstandingToken

from accounts.services import refresh_token_for
from deletions.models import Deletion
from subscriptions.models import Subscription, SubscriptionFeed, SubscriptionGuid
from tests.factories import UserFactory
from tests.helpers import assert_error, subscribe

GUID_5000 = "9b024349-ccf0-5f69-a609-6b82873eab3c" + "a" * 4964


def nested(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


CORPUS: dict[str, bytes] = {
    "empty": b"",
    "null": b"null",
    "true": b"true",
    "number": b"42",
    "string": b'"text"',
    "array": b"[]",
    "array of objects": b'[{"feed_url": "https://example.com/feed"}]',
    "empty object": b"{}",
    "NUL byte": b"\x00",
    "NUL in a string": json.dumps({"username": "a\x00b", "new_guid": "\x00"}).encode(),
    "raw NUL in a string": b'{"username": "a\x00", "refresh_token": "\x00"}',
    "invalid utf-8": b"\xff\xfe\x00\x00",
    "invalid utf-8 in a string": b'{"username": "\xc3\x28", "new_feed_url": "\xc3\x28"}',
    "lone surrogate": b'{"username": "\\ud800", "new_feed_url": "https://x.example/\\udfff"}',
    "5,000-character guid": json.dumps(
        {"subscriptions": [{"feed_url": "https://example.com/f", "guid": GUID_5000}]}
        | {"new_guid": GUID_5000, "refresh_token": GUID_5000}
    ).encode(),
    "2,000-level nesting": nested(2000),
    "2,000-level nesting in a field": b'{"subscriptions": ' + b"[" * 2000 + b"]" * 2000 + b"}",
    "huge string": json.dumps({"username": "u" * 500_000, "new_feed_url": "h" * 500_000}).encode(),
    "huge number": b'{"is_subscribed": ' + b"9" * 100_000 + b"}",
    "wrong types": json.dumps(
        {
            "subscriptions": {"feed_url": 1},
            "username": ["a"],
            "password": {"p": 1},
            "refresh_token": 7,
            "new_feed_url": False,
            "new_guid": 12,
            "is_subscribed": "yes",
        }
    ).encode(),
    "NaN and Infinity": b'{"is_subscribed": NaN, "new_guid": Infinity, "username": -Infinity}',
    "duplicate keys": b'{"is_subscribed": true, "is_subscribed": "x"}',
    "trailing garbage": b'{"is_subscribed": true} trailing',
    "truncated": b'{"subscriptions": [{"feed_url": "https://example.com',
    "BOM then garbage": b"\xef\xbb\xbf\xef\xbb\xbf{",
    "server-owned fields": json.dumps(
        {
            "user": 1,
            "user_id": 1,
            "id": 1,
            "deleted": "2024-01-01T00:00:00.000Z",
            "status": "SUCCESS",
            "deletion_id": 1,
        }
    ).encode(),
}


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
