"""What the feedchecks app does when subscriptions tell it something (connected in apps.py)."""

from typing import Any

from django.db.models import QuerySet

from feedchecks.selectors import subscriptions_with_feed_details
from feedchecks.services import feed_checks_request
from subscriptions.models import Subscription


def check_feeds_after_commit(sender: Any, *, user_id: int, urls: list[str], **kwargs: Any) -> None:
    """subscriptions.signals.feed_check_wanted: check the feeds once the write commits."""
    feed_checks_request(user_id=user_id, urls=urls)


def titles_of_feeds(
    sender: Any, *, subscriptions: QuerySet[Subscription], **kwargs: Any
) -> QuerySet[Subscription]:
    """subscriptions.signals.feed_titles_wanted: the titles the checks read, in the same query."""
    return subscriptions_with_feed_details(subscriptions)
