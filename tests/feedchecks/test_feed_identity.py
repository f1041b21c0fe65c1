"""Feed identity checks end to end in-process: an add, the task after commit, a real local feed
server, and what changes in the user's subscriptions (docs/api.md, "Feed identity")."""

import time
import unicodedata
import uuid
from typing import Any

import pytest

from core import clock, text
from feedchecks import fetcher, parsing, reader, services
from feedchecks.models import FeedCheck
from feedchecks.services import feed_check_run
from subscriptions import feeds
from subscriptions.models import Subscription, SubscriptionFeed, SubscriptionGuid
from subscriptions.services import SubscriptionUpdate, subscription_update
from tests.factories import UserFactory
from tests.feedchecks.feedserver import BILLION_LAUGHS, GUID, rss
from tests.helpers import subscribe

pytestmark = pytest.mark.django_db

OTHER_GUID = "2d8bb39b-8d34-48d4-b223-a0d01eb27d71"


def the_sub(user):
    (sub,) = Subscription.objects.filter(user=user)
    return sub


def guids(sub):
    return {
        str(g)
        for g in SubscriptionGuid.objects.filter(subscription=sub).values_list("guid", flat=True)
    }


def urls(sub):
    return set(SubscriptionFeed.objects.filter(subscription=sub).values_list("url", flat=True))


def check_of(url):
    return FeedCheck.objects.get(key_digest=feeds.feed_key_digest(url))


def test_a_guid_found_replaces_the_computed_one(checks, feed_server, user, add, api):
    feed_server.feed("/feed", rss(guid=GUID))
    url = feed_server.url("/feed")
    computed = str(feeds.computed_guid(url))
    sub = add(user, url)
    assert str(sub.guid) == GUID
    assert sub.guid_changed is not None
    assert guids(sub) == {computed, GUID}
    check = check_of(url)
    assert check.result == FeedCheck.Result.GUID
    assert str(check.guid) == GUID
    assert check.checked is not None
    assert check.error == ""
    # Clients that know the computed guid converge on the feed's.
    body = api.get(f"/v1/subscriptions/{computed}").json()
    assert body["guid"] == computed
    assert body["new_guid"] == GUID


def test_no_guid_in_the_feed_changes_nothing(checks, feed_server, user, add):
    feed_server.feed("/feed", rss())
    sub = add(user, feed_server.url("/feed"))
    assert sub.guid == feeds.computed_guid(feed_server.url("/feed"))
    assert sub.guid_changed is None
    assert check_of(feed_server.url("/feed")).result == FeedCheck.Result.NOTHING


def test_a_guid_that_is_not_a_uuid_is_ignored(checks, feed_server, user, add):
    feed_server.feed("/feed", rss(guid="not-a-uuid"))
    sub = add(user, feed_server.url("/feed"))
    assert sub.guid == feeds.computed_guid(feed_server.url("/feed"))
    assert check_of(feed_server.url("/feed")).result == FeedCheck.Result.NOTHING


def test_the_same_guid_as_ours_changes_nothing(checks, feed_server, user, add):
    url = feed_server.url("/feed")
    feed_server.feed("/feed", rss(guid=str(feeds.computed_guid(url))))
    sub = add(user, url)
    assert sub.guid == feeds.computed_guid(url)
    assert sub.guid_changed is None
    assert guids(sub) == {str(sub.guid)}


def test_a_guid_the_client_sent_is_kept_and_its_feed_not_fetched(checks, feed_server, user, add):
    feed_server.feed("/feed", rss(guid=GUID))
    sub = add(user, feed_server.url("/feed"), OTHER_GUID)
    assert str(sub.guid) == OTHER_GUID
    assert feed_server.requests == []


def test_a_301_chain_moves_the_feed_and_keeps_the_old_url(checks, feed_server, user, add):
    feed_server.redirect("/old", "/older-hop", status=301)
    feed_server.redirect("/older-hop", "/new", status=308)
    feed_server.feed("/new", rss())
    old = feed_server.url("/old")
    sub = add(user, old)
    assert sub.feed_url == feed_server.url("/new")
    assert urls(sub) == {old, feed_server.url("/new")}
    assert sub.guid == feeds.computed_guid(old)  # a move keeps the guid
    check = check_of(old)
    assert check.result == FeedCheck.Result.MOVED
    assert check.new_url == feed_server.url("/new")
    # The old URL still reaches it.
    assert add(user, old).pk == sub.pk


def test_a_temporary_redirect_is_no_move(checks, feed_server, user, add):
    feed_server.redirect("/feed", "/elsewhere", status=302)
    feed_server.feed("/elsewhere", rss())
    sub = add(user, feed_server.url("/feed"))
    assert sub.feed_url == feed_server.url("/feed")


def test_itunes_new_feed_url_moves_the_feed(checks, feed_server, user, add):
    feed_server.feed("/feed", rss(guid=GUID, new_feed_url="https://feeds.example.net/show"))
    url = feed_server.url("/feed")
    sub = add(user, url)
    assert sub.feed_url == "https://feeds.example.net/show"
    assert str(sub.guid) == GUID
    assert urls(sub) == {url, "https://feeds.example.net/show"}
    assert check_of(url).result == FeedCheck.Result.MOVED


def test_a_feed_url_patch_has_the_new_url_checked(
    checks, feed_server, user, add, django_capture_on_commit_callbacks
):
    sub = add(user, "https://a.example/feed", OTHER_GUID)  # a sent guid: no check
    feed_server.redirect("/moved", "/final", status=301)
    feed_server.feed("/final", rss(guid=GUID))
    with django_capture_on_commit_callbacks(execute=True):
        subscription_update(
            user=user,
            guid=uuid.UUID(OTHER_GUID),
            change=SubscriptionUpdate(new_feed_url=feed_server.url("/moved")),
        )
    sub.refresh_from_db()
    assert sub.feed_url == feed_server.url("/final")
    assert str(sub.guid) == OTHER_GUID  # the client's guid stays: it is authoritative
    assert urls(sub) == {"https://a.example/feed", feed_server.url("/moved"), sub.feed_url}


def test_a_guid_already_the_users_merges_the_two_losing_nothing(checks, feed_server, user, add):
    existing = add(user, "https://mirror.example/feed", GUID)
    feed_server.feed("/feed", rss(guid=GUID))
    url = feed_server.url("/feed")
    computed = str(feeds.computed_guid(url))
    added = add(user, url)
    assert added is None  # merged away
    survivor = the_sub(user)
    assert survivor.pk == existing.pk
    assert guids(survivor) == {GUID, computed}
    assert urls(survivor) == {"https://mirror.example/feed", url}
    assert survivor.is_subscribed


def test_a_move_to_a_url_already_the_users_merges_the_two(checks, feed_server, user, add):
    new = feed_server.url("/new")
    feed_server.feed("/new", rss())
    feed_server.redirect("/old", "/new", status=301)
    checks.FEED_CHECKS_ENABLED = False
    first = add(user, new)
    # The earlier one was unsubscribed; the one added now is subscribed: that state wins.
    subscription_update(user=user, guid=first.guid, change=SubscriptionUpdate(is_subscribed=False))
    checks.FEED_CHECKS_ENABLED = True
    old = feed_server.url("/old")
    add(user, old)
    survivor = the_sub(user)
    assert survivor.feed_url == new
    assert urls(survivor) == {old, new}
    assert guids(survivor) == {str(feeds.computed_guid(old)), str(feeds.computed_guid(new))}
    assert survivor.is_subscribed


def test_one_fetch_per_interval_for_every_user(checks, feed_server, add, clock):
    feed_server.feed("/feed", rss(guid=GUID))
    url = feed_server.url("/feed")
    alice, bob, carol = UserFactory(), UserFactory(), UserFactory()
    add(alice, url)
    add(bob, url)
    assert feed_server.requests == ["/feed"]
    assert str(the_sub(alice).guid) == GUID
    assert str(the_sub(bob).guid) == GUID  # from the stored result, without a fetch
    clock.advance(seconds=3601)
    add(carol, url)
    assert feed_server.requests == ["/feed", "/feed"]
    assert str(the_sub(carol).guid) == GUID


def test_a_fetch_applies_to_every_subscription_of_the_feed(checks, feed_server, user, other_user):
    url = feed_server.url("/feed")
    feed_server.feed("/feed", rss(guid=GUID))
    subscribe(user, url)  # checks sent but not run (the test transaction does not commit)
    subscribe(other_user, url)
    feed_check_run(url=url, user_id=user.pk)
    assert str(the_sub(user).guid) == GUID
    assert str(the_sub(other_user).guid) == GUID
    assert feed_server.requests == ["/feed"]


def test_a_fetch_under_way_is_left_to_finish(checks, feed_server, user, clock):
    url = feed_server.url("/feed")
    FeedCheck.objects.create(key_digest=feeds.feed_key_digest(url), url=url, claimed=clock.now)
    assert feed_check_run(url=url, user_id=user.pk) == "under way"
    assert feed_server.requests == []


def test_a_stuck_fetch_is_taken_over(checks, feed_server, user, clock, settings):
    url = feed_server.url("/feed")
    feed_server.feed("/feed", rss(guid=GUID))
    FeedCheck.objects.create(key_digest=feeds.feed_key_digest(url), url=url, claimed=clock.now)
    clock.advance(seconds=settings.CELERY_TASK_TIME_LIMIT + 1)
    subscribe(user, url)
    assert feed_check_run(url=url, user_id=user.pk) == FeedCheck.Result.GUID
    assert str(the_sub(user).guid) == GUID


def test_a_finished_fetch_is_not_taken_over_after_the_task_time_limit(
    checks, feed_server, user, clock, settings
):
    """Only an unfinished fetch counts as stuck: a finished one holds for FEED_CHECK_INTERVAL."""
    url = feed_server.url("/feed")
    feed_server.feed("/feed", rss(guid=GUID))
    subscribe(user, url)
    feed_check_run(url=url, user_id=user.pk)
    clock.advance(seconds=settings.CELERY_TASK_TIME_LIMIT + 1)

    assert feed_check_run(url=url, user_id=user.pk) == "recent"
    assert feed_server.requests == ["/feed"]


def test_deleted_subscriptions_are_untouched(checks, feed_server, user, other_user, add):
    url = feed_server.url("/feed")
    feed_server.feed("/feed", rss(guid=GUID))
    checks.FEED_CHECKS_ENABLED = False
    gone = add(user, url)
    Subscription.objects.filter(pk=gone.pk).update(deleted=clock.now(), is_subscribed=False)
    checks.FEED_CHECKS_ENABLED = True
    add(other_user, url)
    gone.refresh_from_db()
    assert gone.guid == feeds.computed_guid(url)
    assert str(the_sub(other_user).guid) == GUID


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda s: s.feed("/feed", BILLION_LAUGHS), "DTD or entities"),
        (lambda s: s.drip("/feed", every=0.05), "Timed out"),
        (lambda s: s.feed("/feed", b"gone", status=410), "HTTP 410"),
    ],
    ids=["billion-laughs", "slow-drip", "error-status"],
)
def test_errors_are_recorded_and_change_nothing(checks, feed_server, user, add, setup, message):
    setup(feed_server)
    url = feed_server.url("/feed")
    sub = add(user, url)
    assert sub.guid == feeds.computed_guid(url)
    check = check_of(url)
    assert check.result == FeedCheck.Result.ERROR
    assert message in check.error


def readable(text):
    return not any(unicodedata.category(ch) in ("Cc", "Cf", "Cs") for ch in text)


def finished(check):
    """Not "under way": the check's fetch ended after it was claimed."""
    return check.checked is not None and check.checked >= check.claimed


@pytest.mark.parametrize(
    "status_line",
    [
        b"HTTP/1.1 2\x0000 OK",
        b"HTTP/1.1 \x1b[31m200 OK\x07",
        b"HTTP/1.1 2\xff\xfe\x85\x9b00 OK",  # not UTF-8: read as Latin-1, C1 controls
        b"\x00" * 60_000 + b" 200 OK",
    ],
    ids=["nul", "escapes", "not-utf-8", "long"],
)
def test_a_status_line_of_control_characters_is_recorded_as_a_readable_error(
    checks, feed_server, user, status_line
):
    """A NUL reached PostgreSQL, which refused it: the task failed and the check stayed "under
    way" until the task time limit."""
    feed_server.raw("/feed", status_line + b"\r\nContent-Length: 0\r\n\r\n")
    url = feed_server.url("/feed")
    subscribe(user, url)

    assert feed_check_run(url=url, user_id=user.pk) == FeedCheck.Result.ERROR

    check = check_of(url)
    assert check.result == FeedCheck.Result.ERROR
    assert check.error.startswith("BadStatusLine: ")
    assert readable(check.error), check.error
    assert len(check.error) <= services.MAX_ERROR_LENGTH
    assert finished(check)


def test_an_error_text_keeps_what_is_readable():
    def shown(value):
        return text.readable(value, services.MAX_ERROR_LENGTH)

    assert shown("BadStatusLine: HTTP/1.1 2\x0000 OK\r\n") == "BadStatusLine: HTTP/1.1 2\ufffd00 OK"
    assert shown("a\u202eb \udcff\t c") == "a\ufffdb \ufffd c"
    long = shown("x" * 10_000)
    assert len(long) == services.MAX_ERROR_LENGTH
    assert long.endswith("x\u2026")


@pytest.mark.parametrize(
    ("module", "name"), [(fetcher, "fetch"), (reader, "read_feed")], ids=["fetch", "read"]
)
def test_a_check_that_raises_records_an_error_and_is_not_left_under_way(
    checks, feed_server, user, monkeypatch, caplog, module, name
):
    feed_server.feed("/feed", rss(guid=GUID))
    url = feed_server.url("/feed")
    subscribe(user, url)

    def broken(*args, **kwargs):
        raise KeyError("a bug\x00")

    monkeypatch.setattr(module, name, broken)

    assert feed_check_run(url=url, user_id=user.pk) == FeedCheck.Result.ERROR

    check = check_of(url)
    assert check.error == "The check failed unexpectedly (KeyError)"
    assert finished(check)
    assert feed_check_run(url=url, user_id=user.pk) == "recent"
    assert "failed unexpectedly" in caplog.text  # with its traceback, for whoever fixes it


def test_a_result_the_database_refuses_is_recorded_as_an_error(
    checks, feed_server, user, monkeypatch, caplog
):
    """Whatever a value the database cannot store (here a NUL in a title), the check ends."""
    feed_server.feed("/feed", rss(guid=GUID))
    url = feed_server.url("/feed")
    subscribe(user, url)
    identity = parsing.FeedIdentity(guid=uuid.UUID(GUID), new_feed_url=None, title="A\x00show")
    monkeypatch.setattr(reader, "read_feed", lambda *args, **kwargs: identity)

    assert feed_check_run(url=url, user_id=user.pk) == FeedCheck.Result.ERROR

    check = check_of(url)
    assert check.error == "The check's result could not be recorded (DataError)"
    assert (check.guid, check.title) == (None, "")
    assert finished(check)
    assert "Recording the feed check" in caplog.text


def test_a_feed_too_complex_to_read_is_an_error_within_the_bound(checks, feed_server, user):
    """5 MiB of unclosed tags took a minute of a worker's CPU; now a few tenths of a second."""
    checks.FEED_FETCH_MAX_BYTES = 5 * 1024 * 1024
    checks.FEED_FETCH_TIMEOUT = 10
    feed_server.feed("/feed", b"<rss><channel>" + b"<a>" * (5 * 1024 * 1024 // 3 - 5))
    url = feed_server.url("/feed")
    subscribe(user, url)

    started = time.monotonic()
    assert feed_check_run(url=url, user_id=user.pk) == FeedCheck.Result.ERROR
    took = time.monotonic() - started

    check = check_of(url)
    assert check.error.startswith("The feed is too complex to read: ")
    assert took < 3, took


def test_a_huge_feed_is_cut_at_the_cap_and_read(checks, feed_server, user, add):
    feed_server.huge("/feed", 50 * 1024 * 1024)
    url = feed_server.url("/feed")
    sub = add(user, url)
    assert str(sub.guid) == GUID  # the channel comes first: the cut keeps it
    check = check_of(url)
    assert check.result == FeedCheck.Result.GUID
    assert "cut at 262144 bytes" in check.error
    assert feed_server.bytes_sent < 20 * 1024 * 1024


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "[::1]", "169.254.169.254", "10.0.0.1", "0.0.0.0", "2130706433", "localhost"],
)
def test_forbidden_addresses_are_refused_without_a_connection(checks, feed_server, user, add, host):
    checks.FEED_FETCH_ALLOWED_NETWORKS = []
    feed_server.feed("/feed", rss(guid=GUID))
    url = f"http://{host}:{feed_server.port}/feed"
    sub = add(user, url)
    assert sub.guid == feeds.computed_guid(url)
    check = check_of(url)
    assert check.result == FeedCheck.Result.ERROR
    assert "may not be fetched" in check.error
    assert feed_server.connections == 0


def test_a_redirect_to_loopback_is_refused(checks, feed_server, user, add):
    from tests.feedchecks.feedserver import FeedServer

    first = FeedServer("127.0.0.2").start()
    try:
        checks.FEED_FETCH_ALLOWED_NETWORKS = ["127.0.0.2/32"]
        feed_server.feed("/feed", rss(guid=GUID))
        first.redirect("/feed", feed_server.url("/feed"))
        sub = add(user, first.url("/feed"))
        assert sub.feed_url == first.url("/feed")
        assert "may not be fetched" in check_of(first.url("/feed")).error
        assert feed_server.connections == 0
    finally:
        first.stop()


def test_checks_off_fetch_nothing(settings, feed_server, user, add):
    settings.FEED_CHECKS_ENABLED = False
    feed_server.feed("/feed", rss(guid=GUID))
    add(user, feed_server.url("/feed"))
    assert feed_server.requests == []
    assert not FeedCheck.objects.exists()


def test_a_subscription_being_deleted_is_left_alone_and_its_deletion_succeeds(
    checks, feed_server, user, django_capture_on_commit_callbacks
):
    """docs/api.md, "Deletion": only a change of the user's makes a deletion fail."""
    from deletions.models import Deletion
    from deletions.services import deletion_process, deletion_request

    feed_server.feed("/feed", rss(guid=GUID))
    url = feed_server.url("/feed")
    with django_capture_on_commit_callbacks(execute=False):  # the check waits in its queue
        sub = subscribe(user, url)
        deletion = deletion_request(user=user, guid=sub.guid)

    feed_check_run(url=url, user_id=user.pk)

    sub.refresh_from_db()
    assert sub.guid == feeds.computed_guid(url)  # the feed's guid was not taken
    assert deletion_process(deletion_id=deletion.pk) == Deletion.Status.SUCCESS
    deletion.refresh_from_db()
    assert deletion.status == Deletion.Status.SUCCESS


def test_a_found_guid_skips_an_account_deactivated_since_and_reaches_the_others(db, clock):
    """The check reads the subscribers, then each one's lock refuses an account that has gone
    inactive meanwhile: that account is left alone, and the others still get the guid."""
    from tests.factories import UserFactory
    from tests.helpers import subscribe

    url = "https://shared.example/feed.xml"
    active: Any = UserFactory()
    gone: Any = UserFactory()
    for user in (active, gone):
        subscribe(user, url)
    type(gone).objects.filter(pk=gone.pk).update(is_active=False)
    check = FeedCheck.objects.create(
        key_digest=feeds.feed_key_digest(url), url=url, guid=GUID, checked=clock.now
    )
    services._apply(check, user_ids=[gone.pk, active.pk])
    assert str(Subscription.objects.get(user=active).guid) == GUID
    assert str(Subscription.objects.get(user=gone).guid) != GUID
