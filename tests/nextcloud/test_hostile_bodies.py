"""The hostile-body corpus against every Nextcloud path that reads a body, and hostile query
strings against those that read `since`: never a 500; an error is the error object with 400 or
413 and `no-store`; a refused request changes nothing stored."""

from typing import Any

import pytest
from rest_framework.test import APIClient

from episodes.models import EpisodeAction
from gpodder.models import Device, DeviceFeed
from subscriptions.models import Subscription, SubscriptionFeed
from tests.helpers import assert_error, subscribe
from tests.hostile import CORPUS
from tests.nextcloud.helpers import APP

ENDPOINTS = {
    "subscription change": f"{APP}/subscription_change/create",
    "episode action upload": f"{APP}/episode_action/create",
    "doubled slash upload": f"http://testserver/{APP}/episode_action/create",
}


def snapshot() -> list[Any]:
    models = (Subscription, SubscriptionFeed, Device, DeviceFeed, EpisodeAction)
    return [list(model.objects.order_by("pk").values()) for model in models]


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize("body", CORPUS.values(), ids=CORPUS.keys())
@pytest.mark.parametrize("content_type", ["application/json", "text/plain"])
def test_hostile_body_is_refused_with_the_error_object_and_changes_nothing(
    nc: APIClient, alice: Any, endpoint: str, body: bytes, content_type: str
) -> None:
    subscribe(alice, "https://example.com/mine")
    nc.get(f"{APP}/subscriptions")  # the device exists
    before = snapshot()

    response = nc.post(ENDPOINTS[endpoint], data=body, content_type=content_type)

    assert response.status_code < 500, response.content[:300]
    assert response["Cache-Control"] == "no-store"
    if response.status_code == 200:
        # An empty list of actions, or changes naming no usable feed: nothing subscribed.
        assert snapshot()[:2] == before[:2]
        return
    assert_error(response, response.status_code)
    assert response.status_code in (400, 413)
    assert snapshot() == before


HOSTILE_QUERIES = [
    "since=" + "9" * 5000,
    "since=99999999999999999999",
    "since=253402300800",  # past year 9999
    "since=%00",
    "since=%ff%fe",
    "since=1&since=2",
    "since[]=1",
    "since=1e3",
    "since=+1",
    "since= 1",
    "since=%F0%9F%98%80",
    "&".join(f"p{n}=1" for n in range(2000)),
]


@pytest.mark.parametrize("path", ["subscriptions", "episode_action"])
@pytest.mark.parametrize("query", HOSTILE_QUERIES)
def test_hostile_query_is_never_a_500(nc: APIClient, path: str, query: str) -> None:
    response = nc.get(f"{APP}/{path}?{query}")
    assert response.status_code in (200, 400), response.content[:300]
    assert response["Cache-Control"] == "no-store"
    if response.status_code == 400:
        assert_error(response, 400)


@pytest.mark.parametrize(
    "header",
    [
        "Basic",
        "Basic !!!",
        "Basic " + "A" * 10000,
        "Basic YWxpY2U=",  # no colon
        "Basic YWxpY2UAOng=",  # a NUL
        "Basic //79/w==",
        "Bearer x",
        "basic\tabc",
    ],
)
def test_hostile_credentials_are_a_401(alice: Any, header: str) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    response = client.get(f"{APP}/subscriptions")
    assert_error(response, 401)
    assert response["WWW-Authenticate"].startswith("Basic")
