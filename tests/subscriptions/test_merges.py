"""Merges of two subscriptions into one (docs/api.md, "Guid history"), at their edges."""

import pytest

from subscriptions.models import Subscription, SubscriptionGuid
from tests.helpers import subscribe

pytestmark = pytest.mark.django_db

A = "https://a.example.com/rss"
B = "https://b.example.com/rss"


def test_patch_to_the_url_and_guid_of_another_subscription_makes_one(api, user):
    a, b = subscribe(user, A), subscribe(user, B)

    response = api.patch(
        f"/v1/subscriptions/{a.guid}", {"new_feed_url": B, "new_guid": str(b.guid)}, format="json"
    )

    assert response.status_code == 200, response.content
    assert response.json()["new_guid"] == str(b.guid)
    assert response.json()["new_feed_url"] == B
    assert Subscription.objects.filter(user=user).count() == 1
    read = api.get(f"/v1/subscriptions/{a.guid}").json()
    assert read["new_guid"] == str(b.guid)
    assert read["feed_url"] == B
    assert set(SubscriptionGuid.objects.filter(user=user).values_list("guid", flat=True)) == {
        a.guid,
        b.guid,
    }


def test_patch_to_the_url_of_another_subscription_and_a_new_guid_makes_one(api, user):
    a, b = subscribe(user, A), subscribe(user, B)
    fresh = "5d6e7f80-1a2b-4c3d-8e9f-0a1b2c3d4e5f"

    response = api.patch(
        f"/v1/subscriptions/{a.guid}", {"new_feed_url": B, "new_guid": fresh}, format="json"
    )

    assert response.status_code == 200, response.content
    assert Subscription.objects.filter(user=user).count() == 1
    for guid in (a.guid, b.guid, fresh):
        assert api.get(f"/v1/subscriptions/{guid}").json()["feed_url"] == B


def test_merging_into_a_deleted_subscription_keeps_the_patched_state_and_moves_time_forward(
    api, user
):
    a, b = subscribe(user, A), subscribe(user, B)
    Subscription.objects.filter(pk=b.pk).update(deleted=b.subscription_changed, is_subscribed=False)
    deleted_at = b.subscription_changed

    response = api.patch(f"/v1/subscriptions/{a.guid}", {"new_guid": str(b.guid)}, format="json")

    assert response.status_code == 200
    merged = Subscription.objects.get(user=user)
    assert merged.deleted is None
    assert merged.is_subscribed is True
    assert merged.subscription_changed >= deleted_at
    assert api.get(f"/v1/subscriptions/{b.guid}").status_code == 200
