"""Concurrent writes: racing requests settle on one subscription per feed, keep a consistent guid
history, and none fails.

Real threads, each with its own API client and database connection, on committed data.
"""

import random
import uuid
from functools import partial

import pytest

from subscriptions.models import Subscription, SubscriptionFeed, SubscriptionGuid
from tests.helpers import at_once, client_for, subscribe

PODNEWS = "https://podnews.net/rss"
PODNEWS_GUID = "9b024349-ccf0-5f69-a609-6b82873eab3c"
THREADS = 8
MANY = 32

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
    results = race([(client, body(PODNEWS)) for client in clients(user, MANY)])

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


def patch_race(pairs):
    def patch(client, guid, change):
        response = client.patch(f"/v1/subscriptions/{guid}", change, format="json")
        return response.status_code, response.json()

    return at_once(*[partial(patch, client, guid, change) for client, guid, change in pairs])


def assert_history_is_one_chain(sub):
    """Every guid of the subscription reaches it; only the current one is not replaced."""
    rows = list(SubscriptionGuid.objects.filter(subscription=sub).order_by("assigned", "id"))
    current = [row.guid for row in rows if row.replaced is None]
    assert current == [sub.guid]
    assert len({row.guid for row in rows}) == len(rows)
    ends = [row.replaced for row in rows if row.replaced is not None]
    assert len(set(ends)) == len(ends) == len(rows) - 1  # each change at its own time


def test_concurrent_guid_changes_of_one_subscription_make_one_chain(user):
    original = PODNEWS_GUID
    race([(client_for(user), body(PODNEWS))])
    news = [str(uuid.uuid4()) for _ in range(MANY)]

    # Each names the subscription by its original guid, which keeps reaching it.
    results = patch_race(
        [
            (client, original, {"new_guid": new})
            for client, new in zip(clients(user, MANY), news, strict=True)
        ]
    )

    assert_all_200(results)
    sub = Subscription.objects.get(user=user)
    assert str(sub.guid) in news
    assert SubscriptionGuid.objects.filter(subscription=sub).count() == MANY + 1
    assert_history_is_one_chain(sub)
    api = client_for(user)
    for guid in [original, *news]:
        got = api.get(f"/v1/subscriptions/{guid}").json()
        assert got.get("new_guid", got["guid"]) == str(sub.guid)


def test_concurrent_mixed_changes_of_one_subscription_all_land(user):
    race([(client_for(user), body(PODNEWS))])
    changes = [
        {"is_subscribed": i % 2 == 0, "new_feed_url": f"https://podnews.net/rss?v={i}"}
        if i % 3
        else {"new_guid": str(uuid.uuid4())}
        for i in range(MANY)
    ]

    results = patch_race(
        [
            (client, PODNEWS_GUID, change)
            for client, change in zip(clients(user, MANY), changes, strict=True)
        ]
    )

    assert_all_200(results)
    sub = Subscription.objects.get(user=user)
    assert_history_is_one_chain(sub)
    urls = {c["new_feed_url"] for c in changes if "new_feed_url" in c}
    assert sub.feed_url in urls
    assert SubscriptionFeed.objects.filter(subscription=sub).count() == len(urls) + 1


def test_two_subscriptions_taking_each_others_guid_at_once_merge_without_a_loop(user):
    race([(client_for(user), body(PODNEWS, "https://example.com/other"))])
    a, b = (str(g) for g in Subscription.objects.order_by("id").values_list("guid", flat=True))
    pairs = [(client, a, {"new_guid": b}) for client in clients(user, MANY // 2)] + [
        (client, b, {"new_guid": a}) for client in clients(user, MANY // 2)
    ]

    results = patch_race(pairs)

    statuses = {status for status, _ in results}
    assert statuses <= {200, 405}, [r for r in results if r[0] not in (200, 405)]
    [sub] = Subscription.objects.filter(user=user)
    assert_history_is_one_chain(sub)
    assert SubscriptionGuid.objects.filter(subscription=sub).count() == 2


@pytest.fixture
def database_refuses(db):
    """Make PostgreSQL itself fail writes to subscriptions with a given SQLSTATE."""
    from django.db import connection

    def install(sqlstate):
        with connection.cursor() as cursor:
            cursor.execute(
                "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                f"RAISE EXCEPTION 'injected' USING ERRCODE = '{sqlstate}'; END $$"
            )
            cursor.execute(
                "CREATE TRIGGER refuse BEFORE INSERT OR UPDATE ON subscriptions_subscription "
                "FOR EACH ROW EXECUTE FUNCTION refuse()"
            )

    return install  # the test's transaction rolls the trigger back with everything else


@pytest.mark.postgresql
@pytest.mark.django_db(transaction=False)
@pytest.mark.parametrize("sqlstate", ["40P01", "40001", "55P03"])
@pytest.mark.parametrize("write", ["add", "update"])
def test_a_write_that_loses_a_deadlock_is_409_and_changes_nothing(
    user, database_refuses, sqlstate, write
):
    """Deadlock, serialization failure, lock timeout: the error object, never a 500."""
    api = client_for(user)
    subscribe(user, PODNEWS)
    before = list(Subscription.objects.values())
    database_refuses(sqlstate)

    if write == "add":
        response = api.post("/v1/subscriptions", body("https://example.com/new"), format="json")
    else:
        response = api.patch(
            f"/v1/subscriptions/{PODNEWS_GUID}", {"is_subscribed": False}, format="json"
        )

    assert response.status_code == 409
    assert response.json() == {
        "code": "409",
        "message": "Conflict with a concurrent request: send it again",
    }
    assert list(Subscription.objects.values()) == before
