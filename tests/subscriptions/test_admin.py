"""The subscription admin (docs/operations.md, "The admin"): staff find a subscription by its
feed URL (or an earlier one), guid or username, filter it, read its guid history, and change
none of it; and the user list, searched by username, with each account's subscription counts."""

import uuid

import pytest
from django.test import Client
from django.utils import timezone

from subscriptions.models import Subscription
from subscriptions.services import SubscriptionUpdate, subscription_update
from tests.factories import UserFactory
from tests.helpers import listed, subscribe

SUBSCRIPTIONS = "/admin/subscriptions/subscription/"


def test_subscription_list_loads(admin_client, alpha, beta):
    assert listed(admin_client, SUBSCRIPTIONS) == {alpha.pk, beta.pk}


@pytest.mark.parametrize(
    "term",
    ["alpha.example", "https://alpha.example/feed.xml", "ALPHA.EXAMPLE", "feed.xml"],
)
def test_search_by_feed_url(admin_client, alpha, beta, term):
    assert listed(admin_client, f"{SUBSCRIPTIONS}?q={term}") == {alpha.pk}


def test_search_by_feed_url_with_a_query_string(admin_client, alpha, beta):
    assert listed(admin_client, f"{SUBSCRIPTIONS}?q=format%3Drss") == {beta.pk}


def test_search_by_guid(admin_client, alpha, beta):
    assert listed(admin_client, f"{SUBSCRIPTIONS}?q={alpha.guid}") == {alpha.pk}
    assert listed(admin_client, f"{SUBSCRIPTIONS}?q={str(beta.guid).upper()}") == {beta.pk}


def test_search_by_username(admin_client, alpha, beta, bob):
    assert listed(admin_client, f"{SUBSCRIPTIONS}?q=bob") == {beta.pk}


@pytest.mark.parametrize("term", ["nothing-matches", uuid.uuid4(), "a" * 3000])
def test_search_that_matches_nothing_is_an_empty_list(admin_client, alpha, term):
    assert listed(admin_client, f"{SUBSCRIPTIONS}?q={term}") == set()


@pytest.mark.parametrize("term", ["%00", "%27", "%22", "%5C", "%ED%A0%80", "%25"])
def test_odd_search_terms_do_not_break_the_list(admin_client, alpha, term):
    assert listed(admin_client, f"{SUBSCRIPTIONS}?q={term}") <= {alpha.pk}


def test_filter_by_subscribed(admin_client, alice, alpha):
    gone_quiet = subscribe(alice, "https://quiet.example/feed")
    subscription_update(
        user=alice, guid=gone_quiet.guid, change=SubscriptionUpdate(is_subscribed=False)
    )

    assert listed(admin_client, f"{SUBSCRIPTIONS}?is_subscribed__exact=1") == {alpha.pk}
    assert listed(admin_client, f"{SUBSCRIPTIONS}?is_subscribed__exact=0") == {gone_quiet.pk}


def test_filter_by_deleted(admin_client, alice, alpha):
    removed = subscribe(alice, "https://removed.example/feed")
    Subscription.objects.filter(pk=removed.pk).update(deleted=timezone.now(), is_subscribed=False)

    assert listed(admin_client, f"{SUBSCRIPTIONS}?deleted=yes") == {removed.pk}
    assert listed(admin_client, f"{SUBSCRIPTIONS}?deleted=no") == {alpha.pk}


def test_change_page_shows_the_guid_history(admin_client, alice, alpha):
    first = alpha.guid
    second, third = uuid.uuid4(), uuid.uuid4()
    for new in (second, third):
        subscription_update(user=alice, guid=first, change=SubscriptionUpdate(new_guid=new))

    response = admin_client.get(f"{SUBSCRIPTIONS}{alpha.pk}/change/")

    assert response.status_code == 200
    page = response.content.decode()
    for guid in (first, second, third):
        assert str(guid) in page
    assert "alpha.example/feed.xml" in page


def test_search_finds_a_subscription_by_its_current_guid_after_a_change(admin_client, alice, alpha):
    new = uuid.uuid4()
    subscription_update(user=alice, guid=alpha.guid, change=SubscriptionUpdate(new_guid=new))

    assert listed(admin_client, f"{SUBSCRIPTIONS}?q={new}") == {alpha.pk}


def test_admin_cannot_bypass_the_rules_by_deleting_rows(admin_client, alpha):
    response = admin_client.post(f"{SUBSCRIPTIONS}{alpha.pk}/delete/", {"post": "yes"})

    assert response.status_code == 403
    assert Subscription.objects.filter(pk=alpha.pk, deleted__isnull=True).exists()


def test_admin_cannot_bypass_the_rules_by_editing_rows(admin_client, alpha):
    admin_client.post(
        f"{SUBSCRIPTIONS}{alpha.pk}/change/",
        {"feed_url": "https://elsewhere.example/", "guid": str(uuid.uuid4()), "is_subscribed": ""},
    )

    alpha.refresh_from_db()
    assert alpha.feed_url == "https://alpha.example/feed.xml"
    assert alpha.is_subscribed is True


def test_subscriptions_admin_is_for_staff_only(alpha, alice):
    client = Client()
    client.force_login(alice)

    response = client.get(SUBSCRIPTIONS)

    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


def test_search_by_an_earlier_feed_url(admin_client, alice, alpha, beta):
    update = SubscriptionUpdate(new_feed_url="https://moved.example.net/new-feed.xml")
    subscription_update(user=alice, guid=alpha.guid, change=update)

    assert listed(admin_client, f"{SUBSCRIPTIONS}?q={alpha.feed_url}") == {alpha.pk}
    assert listed(admin_client, f"{SUBSCRIPTIONS}?q=moved.example.net") == {alpha.pk}


def test_subscription_list_shows_the_last_change_and_finds_a_users_by_username(
    admin_client, alpha, beta
):
    response = admin_client.get(SUBSCRIPTIONS, {"q": alpha.user.username})

    assert {s.pk for s in response.context["cl"].result_list} == {alpha.pk}
    assert "last change" in response.content.decode().lower()


def test_user_list_loads(admin_client, alice, bob):
    response = admin_client.get("/admin/auth/user/?q=alice")

    assert response.status_code == 200
    assert {u.username for u in response.context["cl"].result_list} == {"alice"}


def test_user_list_shows_subscription_counts_in_a_fixed_number_of_queries(
    admin_client, alice, bob, alpha, django_assert_max_num_queries
):
    subscribe(alice, "https://alpha.example/second")
    dropped = subscribe(alice, "https://alpha.example/dropped")
    subscription_update(
        user=alice, guid=dropped.guid, change=SubscriptionUpdate(is_subscribed=False)
    )
    gone = subscribe(alice, "https://alpha.example/gone")
    Subscription.objects.filter(pk=gone.pk).update(is_subscribed=False, deleted=gone.created)
    for n in range(5):
        subscribe(UserFactory(), f"https://many.example/{n}")

    with django_assert_max_num_queries(12):
        response = admin_client.get("/admin/auth/user/")

    assert response.status_code == 200
    rows = {u.username: u for u in response.context["cl"].result_list}
    assert (rows["alice"]._subscribed, rows["alice"]._subscriptions) == (2, 4)
    assert (rows["bob"]._subscribed, rows["bob"]._subscriptions) == (0, 0)
    assert "subscriptions (all)" in response.content.decode().lower()
