"""Checking feeds in the background for their real guid and new address (docs/api.md, "Feed
identity").

An add or PATCH asks for a check after it commits (feed_checks_request). A worker then claims the
feed URL with a conditional UPDATE, so a URL is fetched at most once per FEED_CHECK_INTERVAL
however many users add it; records what the fetch found in the FeedCheck row (an error too,
whatever failed, with its kind of failure: a check left unrecorded would keep the URL "under
way" until the task time limit); and applies it to every user's subscription at that URL, each
under that user's lock, through the same workspace rules as the API
(subscription_apply_feed_identity). A check that finds the URL fetched recently applies the
stored result to its own user only; one that finds a fetch under way leaves it to that fetch,
which reads the subscriptions after recording its result, so it sees this user's (committed
before this check was sent).

Two more ways a check comes: a feed whose fetch failed is checked again FEED_CHECK_INTERVAL after
it, by a periodic sweep (feed_checks_retry), while someone subscribes to it; and a person may ask
for a check of a subscription's feed now, on its page (feed_check_now), whenever it was last
fetched but at most once a minute per feed, throttled per account.
"""

import logging
import threading
import uuid
from collections import defaultdict
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from datetime import timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import DatabaseError, connection, transaction
from django.db.models import F, OuterRef, Q, Subquery

from core import clock
from core.exceptions import DomainError, NotAuthorized
from core.retry import TRANSIENT_DATABASE_ERRORS
from core.text import readable
from feedchecks import fetcher, parsing, reader, throttles
from feedchecks.catalogue import catalogue_store
from feedchecks.models import FeedCheck
from subscriptions import feeds
from subscriptions.models import SubscriptionFeed
from subscriptions.selectors import subscription_by_guid
from subscriptions.services import subscription_apply_feed_identity

logger = logging.getLogger(__name__)

# The longest error text a check keeps: a server's status line, which an error may quote, is as
# long as the server makes it, and staff read the text in a list.
MAX_ERROR_LENGTH = 500
# The failed feeds one run of the retry sweep sends at most, those whose last try is oldest
# first: a run's sends stay a moment's work whatever happened to many feeds at once.
RETRY_BATCH = 500

Failure = FeedCheck.Failure
# The kind of each failure the fetcher and the reader raise, the first that matches.
_FAILURES: list[tuple[type[Exception], Failure]] = [
    (fetcher.ForbiddenAddress, Failure.REFUSED_NETWORK),
    (fetcher.CannotResolve, Failure.CANNOT_RESOLVE),
    (fetcher.CannotConnect, Failure.CANNOT_CONNECT),
    (fetcher.TimedOut, Failure.TIMED_OUT),
    (fetcher.TLSFailure, Failure.TLS),
    (fetcher.BadRedirect, Failure.REDIRECTS),
    (parsing.UnsafeFeed, Failure.UNSAFE),
    (parsing.FeedTooComplex, Failure.TOO_COMPLEX),
]


class FeedChecksOff(DomainError):
    """A check was asked for while FEED_CHECKS_ENABLED is false."""

    default_message = "Feed checks are turned off on this server."


def feed_checks_request(*, user_id: int, urls: Iterable[str]) -> None:
    """Have each feed URL checked once the current transaction commits.

    One message per request, however many feeds it added: a worker fans it out into one task
    per feed (feed_checks_send), so a first sync of 500 feeds does not wait for 500 sends.
    """
    if not settings.FEED_CHECKS_ENABLED:
        return
    # The URLs of distinct subscriptions have distinct matching keys: only a subscription named
    # twice comes twice, with the same URL. (Two URLs of one feed would be claimed once anyway.)
    unique = sorted(set(urls))
    if unique:
        transaction.on_commit(partial(_send_batch, user_id=user_id, urls=unique))


def _send_batch(*, user_id: int, urls: list[str], force: bool = False) -> None:
    """A broker that cannot be reached loses the checks, logged: a check is an improvement,
    not a promise, and the next add of the feed asks again. Without a broker (tasks run
    in-process), a thread of this process runs them, so the request never waits for a fetch."""
    from feedchecks.tasks import check_feed, check_feeds

    if check_feeds.app.conf.task_always_eager and settings.FEED_CHECK_THREADS:
        _background(user_id=user_id, urls=urls, force=force)
        return
    try:
        if force:  # a person's check now: one feed, no fan-out
            for url in urls:
                check_feed.delay(url, user_id, force=True)
        else:
            check_feeds.delay(urls, user_id)
    except Exception:  # whatever the broker client raised
        logger.warning("Could not send feed checks for user %s", user_id, exc_info=True)


# The in-process runner of checks, when there is no broker (`make run`): made on first use.
_executor: ThreadPoolExecutor | None = None
_running: set[Future[None]] = set()
_executor_lock = threading.Lock()


def _background(*, user_id: int, urls: list[str], force: bool = False) -> None:
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(
                max_workers=settings.FEED_CHECK_THREADS, thread_name_prefix="feedcheck"
            )
        future = _executor.submit(_run_in_background, user_id=user_id, urls=urls, force=force)
        _running.add(future)
    future.add_done_callback(_forget)


def _forget(future: Future[None]) -> None:
    with _executor_lock:
        _running.discard(future)


def _run_in_background(*, user_id: int, urls: list[str], force: bool = False) -> None:
    try:
        for url in urls:
            try:
                feed_check_run(url=url, user_id=user_id, force=force)
            except Exception:  # one feed's failure must not stop the others
                logger.warning("Feed check of %s failed", url, exc_info=True)
    finally:
        connection.close()  # this thread's own connection


def wait_for_background_checks(timeout: float) -> None:
    """Wait until the in-process checks asked for so far have run (tests)."""
    with _executor_lock:
        running = list(_running)
    wait(running, timeout=timeout)


def background_checks_waiting() -> int:
    """How many requests' checks this process's threads have yet to finish, without a broker:
    the queue the admin's overview shows there (each web process has its own)."""
    with _executor_lock:
        return len(_running)


def feed_checks_send(*, user_id: int, urls: list[str]) -> int:
    """Send one check task per feed URL (in a worker); returns how many were sent."""
    from feedchecks.tasks import check_feed

    for url in urls:
        check_feed.delay(url, user_id)
    return len(urls)


def _claim(key_digest: str, *, every: float) -> bool:
    """Take the URL for a fetch unless one started less than `every` seconds ago (or one is
    under way that has not outlived the task time limit)."""
    now = clock.now()
    last_period = now - timedelta(seconds=every)
    stuck = now - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT)
    unfinished = Q(checked__isnull=True) | Q(checked__lt=F("claimed"))
    claimable = (
        Q(claimed__isnull=True) | Q(claimed__lt=last_period) | (Q(claimed__lt=stuck) & unfinished)
    )
    return bool(
        FeedCheck.objects.filter(key_digest=key_digest).filter(claimable).update(claimed=now)
    )


def feed_check_run(*, url: str, user_id: int, force: bool = False) -> str:
    """The task's work: fetch the feed at `url` unless it was fetched recently, and apply what
    it says. Returns what happened, for the task's result.

    Recently is within FEED_CHECK_INTERVAL; when a person asked for the check (`force`), within
    throttles.CHECK_NOW_EVERY, so that people asking at once make one fetch.
    """
    key_digest = feeds.feed_key_digest(url)
    FeedCheck.objects.get_or_create(key_digest=key_digest, defaults={"url": url})
    every = throttles.CHECK_NOW_EVERY if force else settings.FEED_CHECK_INTERVAL
    if not _claim(key_digest, every=every):
        check = FeedCheck.objects.get(key_digest=key_digest)
        if check.checked is None or (check.claimed and check.checked < check.claimed):
            return "under way"  # that fetch applies its result to this user's subscription too
        _apply(check, user_ids=[user_id])
        return "recent"

    check = _fetch_and_record(key_digest, url)
    # Every user subscribed at the URL, read after the result was committed.
    user_ids = (
        SubscriptionFeed.objects.filter(key_digest=key_digest, subscription__deleted__isnull=True)
        .values_list("user_id", flat=True)
        .distinct()
    )
    _apply(check, user_ids=list(user_ids))
    return check.result


def _fetch_and_record(key_digest: str, url: str) -> FeedCheck:
    guid = None
    new_url = ""
    error = ""
    failure = ""
    fetched = None
    try:
        fetched = fetcher.fetch(
            url,
            allowed_networks=fetcher.parse_networks(settings.FEED_FETCH_ALLOWED_NETWORKS),
            connect_timeout=settings.FEED_FETCH_CONNECT_TIMEOUT,
            total_timeout=settings.FEED_FETCH_TIMEOUT,
            max_bytes=settings.FEED_FETCH_MAX_BYTES,
        )
        identity = reader.read_feed(fetched.body, episodes_kept=settings.FEED_EPISODES_KEPT)
    except (fetcher.FetchError, parsing.UnsafeFeed, parsing.UnreadableFeed) as exc:
        error = str(exc)
        result = FeedCheck.Result.ERROR
        failure = _failure(exc)
        if fetched is not None and fetched.truncated and failure == Failure.NOT_A_FEED:
            # What was cut at the cap is no feed: the feed is too large, most likely.
            failure = Failure.TOO_LARGE
            error += f" (the body was cut at {settings.FEED_FETCH_MAX_BYTES} bytes)"
    except Exception as exc:  # a bug, or what a document made a library raise: still a result
        logger.exception("Feed check of %s failed unexpectedly", url)
        error = f"The check failed unexpectedly ({type(exc).__name__})"
        result = FeedCheck.Result.ERROR
        failure = Failure.OTHER
    else:
        guid = identity.guid
        # The publisher's own word first; else where permanent redirects led.
        for candidate in (identity.new_feed_url, fetched.permanent_url):
            if candidate and feeds.feed_key_digest(candidate) != key_digest:
                new_url = candidate
                break
        if new_url:
            result = FeedCheck.Result.MOVED
        elif guid is not None:
            result = FeedCheck.Result.GUID
        else:
            result = FeedCheck.Result.NOTHING
        if fetched.truncated:
            error = f"The body was cut at {settings.FEED_FETCH_MAX_BYTES} bytes"
    described = {}
    if result != FeedCheck.Result.ERROR:
        # Only a feed that was read tells its title: one that is down keeps the last it told.
        described = {
            "title": identity.title,
            "link": identity.link,
            "image_url": identity.image_url,
        }
    error = readable(error, MAX_ERROR_LENGTH)
    try:
        with transaction.atomic():  # a savepoint when called within a transaction
            FeedCheck.objects.filter(key_digest=key_digest).update(
                checked=clock.now(),
                result=result,
                error=error,
                failure=failure,
                guid=guid,
                new_url=new_url,
                **described,
            )
    except TRANSIENT_DATABASE_ERRORS:
        raise  # the task tries again
    except DatabaseError as exc:
        # A value the database refuses must not leave the URL claimed, "under way", until the
        # task time limit: the check ends as an error.
        logger.exception("Recording the feed check of %s failed", url)
        result = FeedCheck.Result.ERROR
        error = f"The check's result could not be recorded ({type(exc).__name__})"
        FeedCheck.objects.filter(key_digest=key_digest).update(
            checked=clock.now(),
            result=result,
            error=error,
            failure=Failure.OTHER,
            guid=None,
            new_url="",
        )
    check = FeedCheck.objects.get(key_digest=key_digest)
    if result == FeedCheck.Result.ERROR:
        logger.info("Feed check of %s failed: %s", url, error)
    else:  # a feed that cannot be read keeps the episodes it had
        try:
            with transaction.atomic():  # a savepoint when called within a transaction
                catalogue_store(
                    feed_id=check.pk, items=identity.episodes, kept=settings.FEED_EPISODES_KEPT
                )
        except DatabaseError:  # the names are a nicety: the feed's identity still applies
            logger.warning("Storing the episodes of %s failed", url, exc_info=True)
    return check


def _failure(exc: Exception) -> Failure:
    """The kind of failure `exc` is, as the pages tell it."""
    if isinstance(exc, fetcher.HTTPStatusError):
        return Failure.NOT_FOUND if exc.status in (404, 410) else Failure.HTTP_ERROR
    for raised, kind in _FAILURES:
        if isinstance(exc, raised):
            return kind
    if isinstance(exc, parsing.UnreadableFeed):  # NotAFeed, or the parser gave up on it
        return Failure.NOT_A_FEED
    return Failure.OTHER


def _apply(check: FeedCheck, *, user_ids: list[int]) -> None:
    if check.guid is None and not check.new_url:
        return
    users = get_user_model().objects.filter(pk__in=user_ids, is_active=True).order_by("pk")
    for user in users:
        try:
            subscription_apply_feed_identity(
                user=user,
                key_digest=check.key_digest,
                guid=check.guid,
                new_feed_url=check.new_url or None,
            )
        except NotAuthorized:  # deactivated or deleted since it was read: nothing of theirs
            continue


def feed_check_now(*, user: Any, guid: uuid.UUID) -> str:
    """Have the feed of the user's subscription that has or had `guid` checked now, however
    recently it was: its person asked, on the podcast's page. Returns the feed URL to be checked.

    Raises NotFound (another user's subscription too), Gone when it is deleted, FeedChecksOff,
    and Throttled past the limits of throttles.count_check_asked.
    """
    subscription = subscription_by_guid(user=user, guid=guid)
    if not settings.FEED_CHECKS_ENABLED:
        raise FeedChecksOff()
    url = subscription.feed_url
    key_digest = feeds.feed_key_digest(url)
    # Fetched a moment ago, whoever asked: the check would find it recent and fetch nothing.
    claimed = FeedCheck.objects.filter(key_digest=key_digest).values_list("claimed", flat=True)
    last = next(iter(claimed), None)
    if last is not None:
        waited = (clock.now() - last).total_seconds()
        if waited < throttles.CHECK_NOW_EVERY:
            raise throttles.checked_lately(wait=throttles.CHECK_NOW_EVERY - waited)
    throttles.count_check_asked(user_id=user.pk, key_digest=key_digest)
    transaction.on_commit(partial(_send_batch, user_id=user.pk, urls=[url], force=True))
    return url


def feed_checks_retry() -> int:
    """Send again the checks of feeds whose last fetch failed at least FEED_CHECK_INTERVAL ago
    and that someone's subscription (not deleted) has as its feed URL now: a feed that was down,
    or whose server erred, comes back on its own. Run by Celery beat and the home server's
    schedule every FEED_RETRY_SWEEP_INTERVAL; at most RETRY_BATCH feeds a run, the longest
    waiting first. Returns how many were sent.

    A URL a subscription moved away from is not tried again: its new one is the one checked.
    """
    if not settings.FEED_CHECKS_ENABLED:
        return 0
    due = clock.now() - timedelta(seconds=settings.FEED_CHECK_INTERVAL)
    # A user to send the check as (any of them: a check that fetches applies to all).
    subscriber = SubscriptionFeed.objects.filter(
        key_digest=OuterRef("key_digest"),
        subscription__deleted__isnull=True,
        subscription__feed_url=F("url"),
    ).values("user_id")[:1]
    failed = (
        FeedCheck.objects.filter(result=FeedCheck.Result.ERROR, claimed__lt=due)
        .annotate(subscriber=Subquery(subscriber))
        .filter(subscriber__isnull=False)
        .order_by("claimed")
        .values_list("url", "subscriber")[:RETRY_BATCH]
    )
    by_user: dict[int, list[str]] = defaultdict(list)
    for url, user_id in failed:
        by_user[user_id].append(url)
    for user_id, urls in by_user.items():
        _send_batch(user_id=user_id, urls=urls)
    return sum(len(urls) for urls in by_user.values())
