"""Reads of what feed checks found, for the pages and the OPML export."""

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Case, CharField, F, OuterRef, QuerySet, Subquery, Value, When
from django.db.models.functions import Coalesce

from core import clock
from feedchecks.models import FAILURE_EXPLAINED, FeedCheck
from subscriptions.models import Subscription, SubscriptionFeed


def _found(name: str) -> Coalesce:
    """What the latest check that found a title, of any URL the subscription has had, found as
    `name` ("" for none). After a move, the new URL's check is the latest."""
    checks = (
        FeedCheck.objects.filter(
            key_digest__in=SubscriptionFeed.objects.filter(
                subscription_id=OuterRef(OuterRef("pk"))
            ).values("key_digest")
        )
        .exclude(title="")
        .order_by("-checked", "-id")
    )
    return Coalesce(Subquery(checks.values(name)[:1]), Value(""), output_field=CharField())


def subscriptions_with_feed_details(
    subscriptions: QuerySet[Subscription],
) -> QuerySet[Subscription]:
    """`subscriptions` with `feed_title`, `feed_link` and `feed_image` ("" when no check knows
    them), read in the same query."""
    return subscriptions.annotate(
        feed_title=_found("title"), feed_link=_found("link"), feed_image=_found("image_url")
    )


def subscriptions_with_feed_title(
    subscriptions: QuerySet[Subscription],
) -> QuerySet[Subscription]:
    """`subscriptions` with `feed_title` alone: to sort or search many of them without reading
    every one's website and artwork."""
    return subscriptions.annotate(feed_title=_found("title"))


def _of_current_feed(found: F | Case) -> Subquery:
    """What `found` reads of the check of the subscription's feed URL now (None when it has
    none).

    Its URL now is the one of its URLs spelled as its `feed_url`; else (the feed re-added in
    another spelling of the same URL) the one it took last.
    """
    # Two lookups rather than one ordered by "spelled as feed_url": SQLite cannot read an
    # outer query's column in a subquery's ORDER BY.
    urls = SubscriptionFeed.objects.filter(subscription_id=OuterRef(OuterRef("pk")))
    spelled = urls.filter(url=OuterRef(OuterRef("feed_url"))).values("key_digest")[:1]
    latest = urls.order_by("-assigned", "-id").values("key_digest")[:1]
    current = Coalesce(Subquery(spelled), Subquery(latest))
    check = FeedCheck.objects.filter(key_digest=current)
    return Subquery(check.annotate(found=found).values("found")[:1])


# A failure the previous release recorded during a rolling upgrade has no kind: it is "other".
_FAILURE = Case(
    When(result=FeedCheck.Result.ERROR, failure="", then=Value(FeedCheck.Failure.OTHER)),
    default=F("failure"),
    output_field=CharField(),
)


def subscriptions_with_feed_health(
    subscriptions: QuerySet[Subscription],
) -> QuerySet[Subscription]:
    """`subscriptions` with what the last check of each one's feed URL now tells (`feed_claimed`,
    `feed_checked`, `feed_failure`, `feed_error`; None when it was never checked), read in the
    same query: feed_health makes it a FeedHealth."""
    return subscriptions.annotate(
        feed_claimed=_of_current_feed(F("claimed")),
        feed_checked=_of_current_feed(F("checked")),
        feed_failure=_of_current_feed(_FAILURE),
        feed_error=_of_current_feed(F("error")),
    )


@dataclass(frozen=True)
class FeedHealth:
    """Whether a subscription's feed can be fetched, as its pages tell it (docs/web.md, "When a
    feed can't be fetched")."""

    checked: datetime | None  # when its last fetch ended; None: never
    failure: str  # FeedCheck.Failure of that fetch, "" when the feed was read
    explained: str  # the failure in words, after "can't be fetched:"
    error: str  # the details, as staff read them
    under_way: bool  # a fetch has started and not ended
    next_try: datetime | None  # when the retry sweep takes a failed feed up again; None: not
    due: bool  # a failed feed's next try is due: the sweep's next run takes it

    @property
    def failing(self) -> bool:
        return bool(self.failure)


def feed_health(subscription: Subscription) -> FeedHealth:
    """The health of `subscription`'s feed, from subscriptions_with_feed_health's fields.

    A failed feed is tried again FEED_CHECK_INTERVAL after the failed fetch started, by the
    retry sweep (feedchecks.services.feed_checks_retry), while its subscription is not deleted
    and checks are on; else it has no next try.
    """
    found: Any = subscription
    claimed: datetime | None = found.feed_claimed
    checked: datetime | None = found.feed_checked
    failure: str = found.feed_failure or ""
    now = clock.now()
    stuck = now - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT)
    under_way = claimed is not None and claimed > stuck and (checked is None or checked < claimed)
    next_try = None
    if failure and settings.FEED_CHECKS_ENABLED and subscription.deleted is None:
        next_try = (claimed or checked or now) + timedelta(seconds=settings.FEED_CHECK_INTERVAL)
    return FeedHealth(
        checked=checked,
        failure=failure,
        explained=FAILURE_EXPLAINED.get(failure, "") if failure else "",
        error=found.feed_error or "",
        under_way=under_way,
        next_try=next_try,
        due=next_try is not None and next_try <= now,
    )
