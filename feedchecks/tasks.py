"""Celery tasks of feed checks: thin wrappers that take a feed URL and a user id."""

from celery import shared_task

from core.retry import RELIABLE
from feedchecks import services


@shared_task(queue="feeds")
def check_feeds(urls: list[str], user_id: int) -> int:
    return services.feed_checks_send(urls=urls, user_id=user_id)


# Retried on database errors only: a feed that cannot be fetched is the check's result.
@shared_task(queue="feeds", max_retries=3, **RELIABLE)
def check_feed(url: str, user_id: int, force: bool = False) -> str:
    return services.feed_check_run(url=url, user_id=user_id, force=force)


@shared_task
def retry_failed_feeds() -> int:
    """Celery beat's: the feeds whose fetch failed, checked again (feed_checks_retry)."""
    return services.feed_checks_retry()
