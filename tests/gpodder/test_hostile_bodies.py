"""The hostile-body corpus against every gpodder endpoint that reads a body: never a 500, an
error is the error object with 400 or 413, and a refused request changes nothing stored."""

from typing import Any

import pytest
from rest_framework.test import APIClient

from gpodder.models import Device, DeviceFeed
from subscriptions.models import Subscription, SubscriptionFeed
from tests.helpers import assert_error, subscribe
from tests.hostile import CORPUS

ENDPOINTS = {
    "device settings": ("post", "/api/2/devices/alice/phone.json"),
    "subscription upload": ("post", "/api/2/subscriptions/alice/phone.json"),
    "simple put json": ("put", "/subscriptions/alice/phone.json"),
    "simple put opml": ("put", "/subscriptions/alice/phone.opml"),
    "login": ("post", "/api/2/auth/alice/login.json"),
}


def snapshot() -> list[Any]:
    models = (Subscription, SubscriptionFeed, Device, DeviceFeed)
    return [list(model.objects.order_by("pk").values()) for model in models]


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize("body", CORPUS.values(), ids=CORPUS.keys())
def test_hostile_body_is_refused_with_the_error_object_and_changes_nothing(
    app: APIClient, alice: Any, endpoint: str, body: bytes
) -> None:
    subscribe(alice, "https://example.com/mine")
    app.post("/api/2/devices/alice/phone.json", {"type": "mobile"}, format="json")
    method, path = ENDPOINTS[endpoint]
    before = snapshot()

    # mygpoclient's label for its JSON bodies.
    response = getattr(app, method)(
        path, data=body, content_type="application/x-www-form-urlencoded"
    )

    assert response.status_code < 500, response.content[:300]
    if endpoint == "simple put json" and body == b"[]":
        # An empty list, as a device sends when it has unsubscribed from everything.
        assert response.status_code == 200
        assert not Subscription.objects.filter(is_subscribed=True).exists()
        return
    if response.status_code == 200:
        # Taken as a body that asks for nothing (login ignores its body; an upload or device
        # settings without a known field): no subscription changed.
        assert snapshot()[:2] == before[:2]
        return
    assert_error(response, response.status_code)
    assert response.status_code in (400, 413)
    assert snapshot() == before
