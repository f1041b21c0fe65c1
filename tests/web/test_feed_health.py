"""Why a feed can't be fetched, on the podcasts list and the podcast's page, and Check now
(docs/web.md, "When a feed can't be fetched")."""

import html
import re
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client

from core import clock
from feedchecks.models import FAILURE_EXPLAINED, FeedCheck
from feedchecks.throttles import FeedCheckThrottle
from subscriptions import feeds
from subscriptions.models import Subscription
from tests.feedchecks.feedserver import GUID, FeedServer, rss
from tests.helpers import subscribe

Failure = FeedCheck.Failure


def failing(
    url: str, failure: str = Failure.NOT_FOUND, error: str = "HTTP 404", **more: Any
) -> FeedCheck:
    """The check of `url`, failed an hour ago."""
    then = clock.now() - timedelta(hours=1)
    fields = {
        "claimed": then,
        "checked": then,
        "result": "error",
        "failure": failure,
        "error": error,
    }
    return FeedCheck.objects.create(
        key_digest=feeds.feed_key_digest(url), url=url, **{**fields, **more}
    )


def text(body: str) -> str:
    """The page's words, tags dropped and whitespace collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", body)).split())


def row_of(body: str, guid: Any) -> str:
    """The list item of the podcast `guid`."""
    rows = re.findall(r'<li class="podcast">.*?</li>\s*(?=<li class="podcast">|</ul>)', body, re.S)
    (row,) = [row for row in rows if f"/podcasts/{guid}/" in row]
    return row


# --- the words -----------------------------------------------------------------------------------


def test_the_list_says_in_words_why_when_it_was_tried_and_when_it_will_be_again(
    page: Client, person: Any, settings: Any
) -> None:
    settings.FEED_CHECKS_ENABLED = True
    settings.FEED_CHECK_INTERVAL = 24 * 3600
    url = "https://gone.example/feed.xml"
    sub = subscribe(person, url)
    check = failing(url)
    row = row_of(page.get("/podcasts/").content.decode(), sub.guid)
    assert "Can't be fetched: nothing was found at its address." in text(row)
    assert check.checked is not None
    assert check.claimed is not None
    tried = check.checked.strftime("%Y-%m-%d %H:%M")
    again = (check.claimed + timedelta(days=1)).strftime("%Y-%m-%d %H:%M")
    assert f"Last tried {tried} UTC; next try after {again} UTC." in text(row)
    assert "HTTP 404" not in row  # the details are on the podcast's page


@pytest.mark.parametrize(
    ("failure", "error"),
    [
        (Failure.NOT_FOUND, "HTTP 404"),
        (Failure.HTTP_ERROR, "HTTP 500"),
        (Failure.TIMED_OUT, "Timed out"),
        (Failure.NOT_A_FEED, "The document is a web page, not a feed"),
        (Failure.REFUSED_NETWORK, "feeds.example resolves to 10.0.0.1, which may not be fetched"),
        (
            Failure.CANNOT_RESOLVE,
            "Cannot resolve feeds.invalid: [Errno -2] Name or service not known",
        ),
        (Failure.CANNOT_CONNECT, "Cannot connect to feeds.example: [Errno 111] Connection refused"),
        (Failure.TOO_LARGE, "The document is not a feed (the body was cut at 5242880 bytes)"),
        (Failure.TOO_COMPLEX, "The feed is too complex to read: more than 10 s of CPU"),
        (Failure.UNSAFE, "The feed declares a DTD or entities: not read"),
        (Failure.TLS, "SSLCertVerificationError: certificate verify failed"),
        (Failure.REDIRECTS, "More than 3 redirects"),
        (Failure.OTHER, "The check failed unexpectedly (KeyError)"),
    ],
)
def test_the_page_says_each_kind_in_words_with_its_details(
    page: Client, person: Any, settings: Any, failure: str, error: str
) -> None:
    settings.FEED_CHECKS_ENABLED = True
    url = "https://feeds.example/show.xml"
    sub = subscribe(person, url)
    failing(url, failure, error)
    words = text(page.get(f"/podcasts/{sub.guid}/").content.decode())
    assert f"This feed can't be fetched: {FAILURE_EXPLAINED[failure]}" in words
    assert f"Details: {error}" in words
    listed = text(page.get("/podcasts/").content.decode())
    assert f"Can't be fetched: {FAILURE_EXPLAINED[failure]}" in listed


def test_the_page_tells_when_it_was_tried_and_when_it_will_be_again(
    page: Client, person: Any, settings: Any
) -> None:
    settings.FEED_CHECKS_ENABLED = True
    settings.FEED_CHECK_INTERVAL = 6 * 3600
    url = "https://gone.example/feed.xml"
    sub = subscribe(person, url)
    check = failing(url)
    body = page.get(f"/podcasts/{sub.guid}/").content.decode()
    assert check.checked is not None
    assert check.claimed is not None
    tried = check.checked.strftime("%Y-%m-%d %H:%M")
    again = (check.claimed + timedelta(hours=6)).strftime("%Y-%m-%d %H:%M")
    assert f"Last tried {tried} UTC. Next try after {again} UTC." in text(body)
    assert "Check now" in body


def test_a_try_that_is_due_is_soon_and_one_under_way_is_said(
    page: Client, person: Any, settings: Any
) -> None:
    settings.FEED_CHECKS_ENABLED = True
    settings.FEED_CHECK_INTERVAL = 1800  # the failure was an hour ago: due
    url = "https://gone.example/feed.xml"
    sub = subscribe(person, url)
    check = failing(url)
    assert "Next try: soon." in text(page.get(f"/podcasts/{sub.guid}/").content.decode())
    assert "next try soon." in text(page.get("/podcasts/").content.decode())
    FeedCheck.objects.filter(pk=check.pk).update(claimed=clock.now())
    assert "Being checked now." in text(page.get(f"/podcasts/{sub.guid}/").content.decode())
    assert "being checked now." in text(page.get("/podcasts/").content.decode())


def test_a_failure_without_a_kind_is_told_as_other(page: Client, person: Any) -> None:
    """What the previous release's processes record during a rolling upgrade."""
    url = "https://feeds.example/show.xml"
    sub = subscribe(person, url)
    failing(url, "", "HTTP 418")
    words = text(page.get(f"/podcasts/{sub.guid}/").content.decode())
    assert f"This feed can't be fetched: {FAILURE_EXPLAINED[Failure.OTHER]}" in words
    assert "Details: HTTP 418" in words


def test_without_checks_there_is_no_next_try(page: Client, person: Any) -> None:
    url = "https://gone.example/feed.xml"
    sub = subscribe(person, url)
    failing(url)
    words = text(page.get(f"/podcasts/{sub.guid}/").content.decode())
    assert "This feed can't be fetched" in words
    assert "Next try" not in words


def test_a_feed_read_or_never_checked_says_so_on_its_page_and_nothing_in_the_list(
    page: Client, person: Any, settings: Any
) -> None:
    settings.FEED_CHECKS_ENABLED = True
    read = subscribe(person, "https://fine.example/feed.xml")
    FeedCheck.objects.create(
        key_digest=feeds.feed_key_digest(read.feed_url),
        url=read.feed_url,
        claimed=clock.now(),
        checked=clock.now(),
        result="guid",
        title="Fine show",
    )
    never = subscribe(person, "https://new.example/feed.xml")
    listed = page.get("/podcasts/").content.decode()
    assert "fetched" not in text(listed)
    words = text(page.get(f"/podcasts/{read.guid}/").content.decode())
    assert "The last check read the feed." in words
    assert "Last tried" in words
    assert "Next try" not in words
    words = text(page.get(f"/podcasts/{never.guid}/").content.decode())
    assert "The feed has not been checked yet." in words
    assert "Last tried" not in words


def test_the_health_is_of_the_url_the_subscription_has_now(
    page: Client, person: Any, settings: Any
) -> None:
    """A feed that moved: the old URL's 404 is history, the new one is read."""
    from subscriptions.services import SubscriptionUpdate, subscription_update

    settings.FEED_CHECKS_ENABLED = False  # no check of the move: the rows below say it all
    sub = subscribe(person, "https://old.example/feed.xml")
    subscription_update(
        user=person,
        guid=sub.guid,
        change=SubscriptionUpdate(new_feed_url="https://new.example/feed.xml"),
    )
    failing("https://old.example/feed.xml")
    FeedCheck.objects.create(
        key_digest=feeds.feed_key_digest("https://new.example/feed.xml"),
        url="https://new.example/feed.xml",
        claimed=clock.now(),
        checked=clock.now(),
        result="nothing",
    )
    words = text(page.get(f"/podcasts/{sub.guid}/").content.decode())
    assert "The last check read the feed." in words
    assert "can't be fetched" not in words


def test_a_deleted_subscription_shows_no_feed_health(page: Client, person: Any) -> None:
    url = "https://gone.example/feed.xml"
    sub = subscribe(person, url)
    failing(url)
    Subscription.objects.filter(pk=sub.pk).update(deleted=clock.now(), is_subscribed=False)
    assert "fetched" not in text(page.get(f"/podcasts/{sub.guid}/").content.decode())
    assert "fetched" not in text(page.get("/podcasts/?status=all").content.decode())


def test_the_details_are_shown_as_text(page: Client, person: Any) -> None:
    url = "https://évil.example/fëed.xml"
    sub = subscribe(person, url)
    failing(url, Failure.HTTP_ERROR, "<script>alert(1)</script> HTTP 500 ☕ \ufffd")
    body = page.get(f"/podcasts/{sub.guid}/").content.decode()
    assert "<script>alert(1)" not in body
    assert "Details: <script>alert(1)</script> HTTP 500 ☕ \ufffd" in text(body)


def test_a_feed_without_a_title_shows_its_url_once(page: Client, person: Any) -> None:
    untitled = subscribe(person, "https://untitled.example/feed.xml")
    titled = subscribe(person, "https://titled.example/feed.xml")
    FeedCheck.objects.create(
        key_digest=feeds.feed_key_digest(titled.feed_url),
        url=titled.feed_url,
        checked=clock.now(),
        result="nothing",
        title="A titled show",
    )
    body = page.get("/podcasts/").content.decode()
    assert '<p class="url">' not in row_of(body, untitled.guid)
    assert '<p class="url">https://titled.example/feed.xml</p>' in row_of(body, titled.guid)

    def shown(sub: Any) -> int:
        """How often the page shows the feed URL above its history table."""
        body = page.get(f"/podcasts/{sub.guid}/").content.decode()
        return (
            body.split('id="main"')[1].split("<h2>Feed URLs and guids</h2>")[0].count(sub.feed_url)
        )

    assert shown(untitled) == 1
    assert shown(titled) == 1


# --- the cost ------------------------------------------------------------------------------------


def test_the_list_and_the_page_read_it_at_the_same_cost_for_1_and_60_failing_feeds(
    page: Client, person: Any, settings: Any, django_assert_max_num_queries: Any
) -> None:
    settings.FEED_CHECKS_ENABLED = True
    page.get("/podcasts/")  # the session and the user are read the same way every time
    first = subscribe(person, "https://feeds.example/0.xml")
    failing(first.feed_url)
    with django_assert_max_num_queries(100) as one:
        page.get("/podcasts/")
    with django_assert_max_num_queries(100) as one_page:
        page.get(f"/podcasts/{first.guid}/")
    for n in range(1, 60):
        failing(subscribe(person, f"https://feeds.example/{n}.xml").feed_url, Failure.TIMED_OUT)
    with django_assert_max_num_queries(len(one.captured_queries)):
        body = page.get("/podcasts/").content.decode()
    assert text(body).count("Can't be fetched:") == 50
    with django_assert_max_num_queries(len(one_page.captured_queries)):
        page.get(f"/podcasts/{first.guid}/")


# --- Check now -----------------------------------------------------------------------------------


@pytest.fixture
def checks(settings: Any) -> Any:
    settings.FEED_CHECKS_ENABLED = True
    settings.FEED_FETCH_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    settings.FEED_FETCH_TIMEOUT = 2.0
    settings.FEED_CHECK_INTERVAL = 24 * 3600
    return settings


def check_now(page: Client, guid: Any, capture: Any) -> Any:
    """Press Check now on the podcast's page, and follow to the page it leads to, once the
    check it asked for has run (after the request's commit)."""
    with capture(execute=True):
        posted = page.post(f"/podcasts/{guid}/check/")
    assert posted.status_code == 302
    assert posted["Location"] == f"/podcasts/{guid}/"
    return page.get(posted["Location"])


def test_check_now_fetches_the_feed_at_once_and_the_page_shows_the_result(
    page: Client,
    person: Any,
    checks: Any,
    feed_server: FeedServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    url = feed_server.url("/feed")
    sub = subscribe(person, url)
    failing(url, claimed=clock.now() - timedelta(minutes=5))  # failed five minutes ago
    feed_server.feed("/feed", rss(guid=GUID))  # and is back
    response = check_now(page, sub.guid, django_capture_on_commit_callbacks)
    assert feed_server.requests == ["/feed"]
    words = text(response.content.decode())
    assert "The feed is being checked. Reload this page in a moment to see the result." in words
    check = FeedCheck.objects.get(key_digest=feeds.feed_key_digest(url))
    assert (check.result, check.failure) == ("guid", "")
    # Its result applies as any check's: the feed's own guid.
    assert str(Subscription.objects.get(pk=sub.pk).guid) == GUID
    assert "The last check read the feed." in text(page.get(f"/podcasts/{GUID}/").content.decode())


def test_check_now_of_a_failing_feed_records_why(
    page: Client,
    person: Any,
    checks: Any,
    feed_server: FeedServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    url = feed_server.url("/missing")
    sub = subscribe(person, url)
    response = check_now(page, sub.guid, django_capture_on_commit_callbacks)
    assert "This feed can't be fetched: nothing was found at its address." in text(
        response.content.decode()
    )
    assert "Details: HTTP 404" in text(response.content.decode())


def test_check_now_once_a_minute_per_feed_with_the_limit_in_words(
    page: Client,
    person: Any,
    checks: Any,
    feed_server: FeedServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    sub = subscribe(person, feed_server.url("/feed"))
    other = subscribe(person, feed_server.url("/other"))
    check_now(page, sub.guid, django_capture_on_commit_callbacks)
    again = text(check_now(page, sub.guid, django_capture_on_commit_callbacks).content.decode())
    assert re.search(
        r"This feed was checked less than a minute ago: each feed can be checked once a "
        r"minute\. Try again in \d+ seconds\.",
        again,
    )
    assert feed_server.requests == ["/feed"]
    check_now(page, other.guid, django_capture_on_commit_callbacks)  # another feed may
    assert feed_server.requests == ["/feed", "/other"]


def test_check_now_per_account_per_hour_with_the_limit_in_words(
    page: Client,
    person: Any,
    stranger: Any,
    checks: Any,
    feed_server: FeedServer,
    django_capture_on_commit_callbacks: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(FeedCheckThrottle, "THROTTLE_RATES", {"feed_check": "2/hour"})
    subs = [subscribe(person, feed_server.url(f"/{n}")) for n in range(3)]
    for sub in subs[:2]:
        check_now(page, sub.guid, django_capture_on_commit_callbacks)
    refused = text(
        check_now(page, subs[2].guid, django_capture_on_commit_callbacks).content.decode()
    )
    assert re.search(
        r"You can ask for at most 2 checks an hour\. Try again in \d+ seconds\.", refused
    )
    assert feed_server.requests == ["/0", "/1"]
    # Per account: another person's checks are theirs.
    mine = subscribe(stranger, feed_server.url("/2"))
    theirs = Client()
    theirs.force_login(stranger)
    answer = check_now(theirs, mine.guid, django_capture_on_commit_callbacks)
    assert "The feed is being checked." in text(answer.content.decode())
    assert feed_server.requests == ["/0", "/1", "/2"]


def test_another_persons_podcast_or_none_is_a_404_and_nothing_is_fetched(
    page: Client,
    stranger: Any,
    checks: Any,
    feed_server: FeedServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    theirs = subscribe(stranger, feed_server.url("/feed"))
    with django_capture_on_commit_callbacks(execute=True):
        assert page.post(f"/podcasts/{theirs.guid}/check/").status_code == 404
        assert page.post("/podcasts/2d8bb39b-8d34-48d4-b223-a0d01eb27d71/check/").status_code == 404
        assert page.post("/podcasts/not-a-guid/check/").status_code == 404
    assert feed_server.requests == []


def test_a_deleted_subscription_is_told_and_not_fetched(
    page: Client,
    person: Any,
    checks: Any,
    feed_server: FeedServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    sub = subscribe(person, feed_server.url("/feed"))
    Subscription.objects.filter(pk=sub.pk).update(deleted=clock.now(), is_subscribed=False)
    words = text(check_now(page, sub.guid, django_capture_on_commit_callbacks).content.decode())
    assert "This subscription has been deleted: its feed is not checked." in words
    assert feed_server.requests == []


def test_with_checks_off_it_says_so(
    page: Client, person: Any, django_capture_on_commit_callbacks: Any
) -> None:
    sub = subscribe(person, "https://feeds.example/feed.xml")
    words = text(check_now(page, sub.guid, django_capture_on_commit_callbacks).content.decode())
    assert "Feed checks are turned off on this server." in words


def test_check_now_takes_a_post_with_its_token_from_a_signed_in_person(
    person: Any, checks: Any
) -> None:
    sub = subscribe(person, "https://feeds.example/feed.xml")
    signed_out = Client()
    response = signed_out.post(f"/podcasts/{sub.guid}/check/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=")
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(person)
    assert browser.get(f"/podcasts/{sub.guid}/check/").status_code == 405
    assert browser.post(f"/podcasts/{sub.guid}/check/").status_code == 403  # no CSRF token
