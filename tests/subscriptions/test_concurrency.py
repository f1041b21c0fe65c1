"""Concurrent adds: racing requests settle on one subscription per feed, and none fails.

Real threads, each with its own API client and database connection, on committed data.
"""

import random
import uuid
from functools import partial

import pytest

from subscriptions.models import Subscription, SubscriptionFeed, SubscriptionGuid
from tests.conftest import client_for
from tests.helpers import at_once

PODNEWS = "https://podnews.net/rss"
PODNEWS_GUID = "9b024349-ccf0-5f69-a609-6b82873eab3c"
THREADS = 8

pytestmark = pytest.mark.django_db(transaction=True)


def race(bodies_by_client):
    """POST every (client, body) pair at the same moment; return (status, json) of each."""

    def post(client, body):
        response = client.post("/v1/subscriptions", body, format="json")
        return response.status_code, response.json()

    return at_once(*[partial(post, client, body) for client, body in bodies_by_client])


def clients(user, count=THREADS):
    made = []
    for _ in range(count):
        client = client_for(user)
        # A crash must show up as a 500 answer to assert on, not as an exception in the thread.
        client.raise_request_exception = False
        made.append(client)
    return made


def body(*entries):
    return {"subscriptions": [{"feed_url": e} if isinstance(e, str) else e for e in entries]}


def assert_all_200(results):
    statuses = [status for status, _ in results]
    assert statuses == [200] * len(results), [r for r in results if r[0] != 200]


@pytest.mark.parametrize("round_", range(3))
def test_concurrent_adds_of_one_feed_make_one_subscription(user, round_):
    results = race([(client, body(PODNEWS)) for client in clients(user)])

    assert_all_200(results)
    assert {json["success"][0]["guid"] for _, json in results} == {PODNEWS_GUID}
    assert Subscription.objects.filter(user=user).count() == 1
    assert SubscriptionGuid.objects.filter(user=user).count() == 1
    assert SubscriptionFeed.objects.filter(user=user).count() == 1
    assert Subscription.objects.get(user=user).is_subscribed is True


def test_concurrent_adds_of_url_variants_make_one_subscription(user):
    variants = [
        PODNEWS,
        "HTTPS://podnews.net/rss",
        "https://PODNEWS.NET/rss",
        "https://podnews.net:443/rss",
        "https://podnews.net/rss/",
        "HTTPS://PodNews.Net:443/rss/",
        PODNEWS,
        "https://podnews.net/rss/",
    ]

    results = race([(c, body(v)) for c, v in zip(clients(user), variants, strict=True)])

    assert_all_200(results)
    assert len({json["success"][0]["guid"] for _, json in results}) == 1
    assert Subscription.objects.filter(user=user).count() == 1


def test_concurrent_adds_with_one_sent_guid_make_one_subscription(user):
    guid = str(uuid.uuid4())

    results = race([(c, body({"feed_url": PODNEWS, "guid": guid})) for c in clients(user)])

    assert_all_200(results)
    assert {json["success"][0]["guid"] for _, json in results} == {guid}
    assert list(Subscription.objects.filter(user=user).values_list("guid", flat=True)) == [
        uuid.UUID(guid)
    ]


def test_concurrent_batches_in_different_orders_make_one_subscription_per_feed(user):
    feeds = [f"https://example.com/show/{i}" for i in range(20)]
    shuffled = [random.Random(seed).sample(feeds, len(feeds)) for seed in range(THREADS)]

    results = race([(c, body(*order)) for c, order in zip(clients(user), shuffled, strict=True)])

    assert_all_200(results)
    assert all(len(json["success"]) == 20 for _, json in results)
    stored = sorted(Subscription.objects.filter(user=user).values_list("feed_url", flat=True))
    assert stored == sorted(feeds)


def test_concurrent_adds_by_two_users_make_one_subscription_each(user, other_user):
    pairs = [(c, body(PODNEWS)) for c in clients(user, 4) + clients(other_user, 4)]

    results = race(pairs)

    assert_all_200(results)
    assert Subscription.objects.filter(user=user).count() == 1
    assert Subscription.objects.filter(user=other_user).count() == 1
