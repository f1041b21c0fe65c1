"""What the feedchecks app does when subscriptions tell it something (connected in apps.py)."""

from typing import Any

from feedchecks.services import feed_checks_request


def check_feeds_after_commit(sender: Any, *, user_id: int, urls: list[str], **kwargs: Any) -> None:
    """subscriptions.signals.feed_check_wanted: check the feeds once the write commits."""
    feed_checks_request(user_id=user_id, urls=urls)
