"""Reads of what feed checks found, for the pages and the OPML export."""

from django.db.models import CharField, OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from feedchecks.models import FeedCheck
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
