"""Properties of the write services over generated inputs (hypothesis), on the real database.

Each example runs in a savepoint rolled back at its end, so examples start from nothing.
"""

import contextlib
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import transaction
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from core.exceptions import DomainError
from subscriptions import selectors, services
from subscriptions.models import Subscription, SubscriptionFeed, SubscriptionGuid

pytestmark = pytest.mark.django_db

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
GUIDS = [uuid.UUID(int=n) for n in range(1, 7)]

# Few hosts and paths, many spellings of each: the same feed, and different feeds, meet often.
feed_urls = st.builds(
    lambda scheme, host, port, path, slash: f"{scheme}://{host}{port}/{path}{slash}",
    st.sampled_from(["http", "https", "HTTPS"]),
    st.sampled_from(["a.example", "A.EXAMPLE", "b.example"]),
    st.sampled_from(["", ":443", ":80"]),
    st.sampled_from(["feed", "rss", "Feed"]),
    st.sampled_from(["", "/"]),
)
bad_urls = st.sampled_from(["no-protocol.example/feed", "ftp://a.example/feed", "https://", ""])
entries = st.builds(
    services.AddEntry,
    feed_url=st.one_of(feed_urls, bad_urls),
    guid=st.one_of(st.none(), st.sampled_from([str(g) for g in GUIDS]), st.just("not-a-guid")),
)


@contextmanager
def fresh() -> Iterator[None]:
    """A clean slate for one example, rolled back afterwards."""
    with transaction.atomic():
        yield
        transaction.set_rollback(True)


def stored(user: Any) -> dict[str, Any]:
    """What the rows say, without the times of the writes."""
    subs = Subscription.objects.filter(user=user)
    return {
        "subscriptions": sorted(
            (str(s.guid), s.feed_url, s.is_subscribed, s.deleted is None) for s in subs
        ),
        "guids": sorted(
            (str(row.guid), str(row.subscription.guid), row.replaced is None)
            for row in SubscriptionGuid.objects.filter(user=user).select_related("subscription")
        ),
        "feeds": sorted(
            (row.key_digest, str(row.subscription.guid))
            for row in SubscriptionFeed.objects.filter(user=user).select_related("subscription")
        ),
    }


def assert_history_consistent(user: Any) -> None:
    """Every guid ever used reaches exactly one subscription, in one step, and each
    subscription's current guid is the one guid of its history not replaced."""
    # Three queries whatever the history, checked here: hypothesis calls this after each of
    # hundreds of steps.
    subs = list(Subscription.objects.filter(user=user))
    history = list(SubscriptionGuid.objects.filter(subscription__in=subs))
    for sub in subs:
        rows = [row for row in history if row.subscription_id == sub.pk]
        assert [row.guid for row in rows if row.replaced is None] == [sub.guid]
        # The list reads no history for a subscription without a guid change (selectors).
        assert len(rows) == 1 or sub.guid_changed is not None
    for row in SubscriptionGuid.objects.filter(user=user):
        assert sum(other.guid == row.guid for other in history) == 1


@SETTINGS
@given(batch=st.lists(entries, min_size=1, max_size=12))
@example(  # once taken out of the second guid's history, the URL merged the two on a resend
    batch=[
        services.AddEntry("http://a.example/feed", str(GUIDS[0])),
        services.AddEntry("https://a.example/rss", str(GUIDS[1])),
        services.AddEntry("http://a.example/rss", str(GUIDS[1])),
        services.AddEntry("https://a.example/rss", str(GUIDS[0])),
    ]
)
def test_the_same_batch_sent_twice_leaves_the_same_rows(user, clock, batch):
    with fresh():
        first = services.subscription_add_many(user=user, entries=batch)
        after_first = stored(user)
        clock.advance(seconds=1)

        second = services.subscription_add_many(user=user, entries=batch)

        assert stored(user) == after_first
        assert [s.guid for s in second.success] == [s.guid for s in first.success]
        assert second.failure == first.failure
        assert_history_consistent(user)


patch_steps = st.lists(
    st.tuples(
        st.sampled_from(GUIDS),  # the guid the PATCH names: any the user may have had
        st.fixed_dictionaries(
            {},
            optional={
                "new_guid": st.sampled_from(GUIDS),
                "new_feed_url": feed_urls,
                "is_subscribed": st.booleans(),
            },
        ),
    ),
    min_size=1,
    max_size=15,
)


def add_three(user: Any) -> None:
    """Three subscriptions, at three feeds, with the first three guids."""
    for n, guid in enumerate(GUIDS[:3]):
        entry = services.AddEntry(feed_url=f"https://s{n}.example/feed", guid=str(guid))
        services.subscription_add_many(user=user, entries=[entry])


@SETTINGS
@given(steps=patch_steps)
def test_guid_history_never_loops_whatever_the_patches(user, clock, steps):
    with fresh():
        add_three(user)
        for guid, change in steps:
            clock.advance(milliseconds=1)
            before = stored(user)
            try:
                services.subscription_update(
                    user=user, guid=guid, change=services.SubscriptionUpdate(**change)
                )
                merged = Subscription.objects.filter(user=user).count() < 3
                event("applied", payload="merge" if merged else "")
            except DomainError as exc:
                event("refused", payload=type(exc).__name__)
                assert stored(user) == before  # a refused change changes nothing
            assert_history_consistent(user)
        # Every guid ever used still answers: its subscription's current guid.
        for row in SubscriptionGuid.objects.filter(user=user):
            sub = selectors.subscription_by_guid(user=user, guid=row.guid)
            assert sub.guid in {r.guid for r in SubscriptionGuid.objects.filter(subscription=sub)}


def listed_guid(sub: Subscription, since: Any) -> uuid.UUID:
    """The guid the list shows `sub` under, from its history (docs/api.md,
    "GET /v1/subscriptions")."""
    rows = sorted(
        SubscriptionGuid.objects.filter(subscription=sub), key=lambda r: (r.assigned, r.id)
    )
    current = [
        r
        for r in rows
        if since is not None and r.assigned <= since and (r.replaced is None or r.replaced > since)
    ]
    current.sort(key=lambda r: (r.replaced is None, r.replaced or since, r.assigned, r.id))
    return (current or rows)[0].guid


@SETTINGS
@given(steps=patch_steps)
def test_the_list_shows_each_subscription_under_its_guid_at_since(user, clock, steps):
    with fresh():
        add_three(user)
        times = [None, clock.now]
        for guid, change in steps:
            clock.advance(milliseconds=1)
            with contextlib.suppress(DomainError):  # a refused change is part of the history too
                services.subscription_update(
                    user=user, guid=guid, change=services.SubscriptionUpdate(**change)
                )
            times.append(clock.now)
        for since in times:
            total, items = selectors.subscription_list(user=user, since=since, offset=0, limit=50)
            expected = [
                sub
                for sub in Subscription.objects.filter(user=user).order_by("id")
                if since is None or sub.changed > since
            ]
            assert total == len(expected)
            assert [(item.guid, item.shown_guid) for item in items] == [
                (str(sub.guid), str(listed_guid(sub, since))) for sub in expected
            ]
