"""Why a feed could not be fetched, as a kind a person is told in words (FeedCheck.Failure): each
kind recorded from a real failing fetch, on real sockets against the local feed server; a later
good fetch clears it; the kinds of checks stored before they existed; and the sweep that tries a
failed feed again (docs/web.md, "When a feed can't be fetched")."""

import socket
from datetime import timedelta
from typing import Any

import pytest
import trustme

from core import clock
from feedchecks import reader, services
from feedchecks.models import FAILURE_EXPLAINED, FeedCheck
from subscriptions.models import Subscription
from subscriptions.services import SubscriptionUpdate, subscription_update
from tests.factories import UserFactory
from tests.feedchecks.feedserver import BILLION_LAUGHS, GUID, rss
from tests.feedchecks.test_feed_identity import check_of
from tests.feedchecks.test_fetcher import TlsFeedServer
from tests.helpers import migrate

Failure = FeedCheck.Failure
WEB_PAGE = b"<!doctype html><html><head><title>Welcome</title></head><body><p>Hi</p></body></html>"
# A page of an older kind, with the DTD of HTML 4.
OLD_PAGE = (
    b'\n <!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01//EN" "http://www.w3.org/TR/html4/strict.dtd">'
    b"<HTML><BODY>Parked domain</BODY></HTML>"
)


def failed(url: str) -> FeedCheck:
    check = check_of(url)
    assert check.result == FeedCheck.Result.ERROR, (check.result, check.error)
    return check


def test_a_404_is_not_found(checks, feed_server, user, add):
    url = feed_server.url("/nothing-here")  # no route: the server answers 404
    add(user, url)
    check = failed(url)
    assert (check.failure, check.error) == (Failure.NOT_FOUND, "HTTP 404")


def test_a_410_is_not_found_too(checks, feed_server, user, add):
    feed_server.feed("/gone", b"", status=410)
    add(user, feed_server.url("/gone"))
    assert failed(feed_server.url("/gone")).failure == Failure.NOT_FOUND


@pytest.mark.parametrize("status", [500, 503, 403])
def test_another_status_is_a_server_error_with_its_status_in_the_details(
    checks, feed_server, user, add, status
):
    feed_server.feed("/broken", b"Internal error", status=status)
    add(user, feed_server.url("/broken"))
    check = failed(feed_server.url("/broken"))
    assert (check.failure, check.error) == (Failure.HTTP_ERROR, f"HTTP {status}")


@pytest.mark.parametrize(
    "body",
    [
        WEB_PAGE,
        OLD_PAGE,
        b"<html><body>No doctype</body></html>",
        b"",
        b'{"feed": "no"}',
        b"Just some text",
        b"<?xml version='1.0'?><x/>",
    ],
)
def test_a_page_that_is_no_feed_is_not_a_feed(checks, feed_server, user, add, body):
    feed_server.feed("/page", body)
    add(user, feed_server.url("/page"))
    check = failed(feed_server.url("/page"))
    assert check.failure == Failure.NOT_A_FEED
    assert check.title == ""  # the page's <title> is never the podcast's name


def test_a_web_page_keeps_the_name_the_last_good_fetch_found(checks, feed_server, user, add):
    """A feed whose address now serves a web page (a parked domain, a login wall) keeps the
    title, and its episodes, of the last fetch that read it."""
    url = feed_server.url("/feed")
    episode = b"<item><guid>episode-1</guid><title>Episode 1</title></item>"
    feed_server.feed("/feed", rss().replace(b"<item><title>Episode 1</title></item>", episode))
    sub = add(user, url)
    assert check_of(url).title == "A show"
    assert check_of(url).episodes.count() == 1
    feed_server.feed("/feed", WEB_PAGE)
    age(url, 61)
    services.feed_check_run(url=url, user_id=sub.user_id, force=True)
    check = failed(url)
    assert (check.failure, check.title) == (Failure.NOT_A_FEED, "A show")
    assert check.episodes.count() == 1


def test_a_server_too_slow_is_timed_out(checks, feed_server, user, add):
    checks.FEED_FETCH_TIMEOUT = 0.5
    feed_server.drip("/slow", headers_too=True, every=0.05, seconds=5)
    add(user, feed_server.url("/slow"))
    check = failed(feed_server.url("/slow"))
    assert check.failure == Failure.TIMED_OUT
    assert check.error.startswith("Timed out")


def test_a_private_address_is_refused_by_the_network_rules(checks, feed_server, user, add):
    checks.FEED_FETCH_ALLOWED_NETWORKS = []  # loopback, as every private network, is refused
    url = feed_server.url("/feed")
    feed_server.feed("/feed", rss())
    add(user, url)
    check = failed(url)
    assert check.failure == Failure.REFUSED_NETWORK
    assert "which may not be fetched" in check.error
    assert feed_server.connections == 0


def test_a_host_that_does_not_resolve_cannot_be_resolved(checks, user, add):
    url = "http://feeds.invalid/feed.xml"  # .invalid never resolves (RFC 2606)
    add(user, url)
    check = failed(url)
    assert check.failure == Failure.CANNOT_RESOLVE
    assert check.error.startswith("Cannot resolve feeds.invalid")


def test_a_port_nobody_listens_on_cannot_connect(checks, user, add):
    with socket.socket() as free:  # a port just freed: nothing listens there
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    url = f"http://127.0.0.1:{port}/feed"
    add(user, url)
    check = failed(url)
    assert check.failure == Failure.CANNOT_CONNECT
    assert check.error.startswith("Cannot connect to 127.0.0.1")


def test_a_certificate_for_another_name_is_a_tls_failure(checks, user, add, monkeypatch, tmp_path):
    checks.FEED_FETCH_ALLOWED_NETWORKS = ["127.0.0.0/8", "::1/128"]  # localhost, either
    ca = trustme.CA()
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))
    server = TlsFeedServer(ca)
    server.issue("feeds.example")  # not localhost
    server.feed("/feed", rss(guid=GUID))
    server.start()
    try:
        url = f"https://localhost:{server.port}/feed"
        add(user, url)
    finally:
        server.stop()
    check = failed(url)
    assert check.failure == Failure.TLS
    assert "certificate" in check.error


def test_a_redirect_loop_is_bad_redirects(checks, feed_server, user, add):
    feed_server.redirect("/loop", "/loop", status=302)
    add(user, feed_server.url("/loop"))
    check = failed(feed_server.url("/loop"))
    assert (check.failure, check.error) == (Failure.REDIRECTS, "More than 3 redirects")


def test_entities_are_unsafe(checks, feed_server, user, add):
    feed_server.feed("/laughs", BILLION_LAUGHS)
    add(user, feed_server.url("/laughs"))
    assert failed(feed_server.url("/laughs")).failure == Failure.UNSAFE


def test_too_many_tags_is_too_complex(checks, feed_server, user, add):
    feed_server.feed("/tags", b"<" * 250_001)  # within the fetch's cap, past the reader's
    add(user, feed_server.url("/tags"))
    assert failed(feed_server.url("/tags")).failure == Failure.TOO_COMPLEX


def test_a_body_past_the_cap_that_is_no_feed_is_too_large(checks, feed_server, user, add):
    feed_server.feed("/big", b"x" * (checks.FEED_FETCH_MAX_BYTES + 1000))
    add(user, feed_server.url("/big"))
    check = failed(feed_server.url("/big"))
    assert check.failure == Failure.TOO_LARGE
    assert f"cut at {checks.FEED_FETCH_MAX_BYTES} bytes" in check.error


def test_a_large_feed_cut_at_the_cap_is_still_read(checks, feed_server, user, add):
    feed_server.huge("/huge", checks.FEED_FETCH_MAX_BYTES * 2)
    add(user, feed_server.url("/huge"))
    check = check_of(feed_server.url("/huge"))
    assert (check.result, check.failure) == (FeedCheck.Result.GUID, "")


def test_anything_else_is_other(checks, feed_server, user, add, monkeypatch):
    def broken(data: bytes, *, episodes_kept: int) -> Any:
        raise RuntimeError("The feed reader exited with 1")

    monkeypatch.setattr(reader, "read_feed", broken)
    feed_server.feed("/feed", rss())
    add(user, feed_server.url("/feed"))
    check = failed(feed_server.url("/feed"))
    assert check.failure == Failure.OTHER
    assert check.error == "The check failed unexpectedly (RuntimeError)"


def test_every_kind_is_told_in_words() -> None:
    assert set(FAILURE_EXPLAINED) == set(Failure.values)
    assert all(words.endswith(".") and words[0].islower() for words in FAILURE_EXPLAINED.values())


def test_a_good_fetch_clears_the_failure(checks, feed_server, user, add):
    url = feed_server.url("/feed")
    feed_server.feed("/feed", b"", status=500)
    sub = add(user, url)
    assert failed(url).failure == Failure.HTTP_ERROR
    feed_server.feed("/feed", rss(guid=GUID))
    age(url, 61)
    assert services.feed_check_run(url=url, user_id=sub.user_id, force=True) == "guid"
    check = check_of(url)
    assert (check.result, check.failure, check.error) == (FeedCheck.Result.GUID, "", "")


def test_the_database_refuses_a_failure_on_a_check_that_did_not_fail(db):
    from django.db import IntegrityError, transaction

    check = FeedCheck.objects.create(key_digest="a" * 64, url="https://a.example/", result="guid")
    with pytest.raises(IntegrityError), transaction.atomic():
        FeedCheck.objects.filter(pk=check.pk).update(failure=Failure.TIMED_OUT)


# --- when a check runs again --------------------------------------------------------------------


def test_a_check_asked_for_now_fetches_whenever_the_last_was_but_once_a_minute(
    checks, feed_server, user, add, clock
):
    url = feed_server.url("/feed")
    feed_server.feed("/feed", b"", status=500)
    sub = add(user, url)
    assert feed_server.requests == ["/feed"]
    # Within FEED_CHECK_INTERVAL a check of an add stores nothing new ...
    assert services.feed_check_run(url=url, user_id=sub.user_id) == "recent"
    # ... one a person asked for fetches, unless one was asked for less than a minute ago.
    clock.advance(seconds=61)
    assert services.feed_check_run(url=url, user_id=sub.user_id, force=True) == "error"
    assert services.feed_check_run(url=url, user_id=sub.user_id, force=True) == "recent"
    assert feed_server.requests == ["/feed", "/feed"]


def age(url: str, seconds: float) -> None:
    """Make the check of `url` look as if it started and ended `seconds` ago."""
    then = clock.now() - timedelta(seconds=seconds)
    FeedCheck.objects.filter(pk=check_of(url).pk).update(claimed=then, checked=then)


def test_the_sweep_tries_a_failed_feed_again_once_the_interval_has_passed(
    checks, feed_server, user, add
):
    url = feed_server.url("/feed")
    feed_server.feed("/feed", b"", status=503)
    add(user, url)
    assert services.feed_checks_retry() == 0  # failed just now: not due
    age(url, checks.FEED_CHECK_INTERVAL - 60)
    assert services.feed_checks_retry() == 0
    feed_server.feed("/feed", rss(guid=GUID))  # the server is back
    age(url, checks.FEED_CHECK_INTERVAL + 1)
    assert services.feed_checks_retry() == 1
    check = check_of(url)
    assert (check.result, check.failure) == (FeedCheck.Result.GUID, "")
    # Applied like any check: the feed's guid replaces the computed one.
    assert str(Subscription.objects.get(user=user).guid) == GUID
    assert services.feed_checks_retry() == 0  # read now: nothing to try again


def test_the_sweep_leaves_feeds_nobody_follows_by_that_url_and_good_feeds(
    checks, feed_server, user, add, django_capture_on_commit_callbacks
):
    feed_server.feed("/fine", rss())
    for path in ("/deleted", "/moved-from", "/fine"):
        add(user, feed_server.url(path))  # all but /fine: no route, 404
    deleted = Subscription.objects.get(feed_url=feed_server.url("/deleted"))
    Subscription.objects.filter(pk=deleted.pk).update(deleted=clock.now(), is_subscribed=False)
    moved = Subscription.objects.get(feed_url=feed_server.url("/moved-from"))
    feed_server.feed("/moved-to", rss())
    with django_capture_on_commit_callbacks(execute=True):
        subscription_update(
            user=user,
            guid=moved.guid,
            change=SubscriptionUpdate(new_feed_url=feed_server.url("/moved-to")),
        )
    for path in ("/deleted", "/moved-from", "/fine"):
        age(feed_server.url(path), checks.FEED_CHECK_INTERVAL + 1)
    assert services.feed_checks_retry() == 0


def test_the_sweep_takes_those_waiting_longest_first_a_batch_at_a_time(
    checks, feed_server, add, monkeypatch, db
):
    monkeypatch.setattr(services, "RETRY_BATCH", 1)
    for n, path in enumerate(("/a", "/b")):
        add(UserFactory(), feed_server.url(path))  # no route: 404
        age(feed_server.url(path), checks.FEED_CHECK_INTERVAL + 100 - n * 10)
    before = list(feed_server.requests)
    assert services.feed_checks_retry() == 1
    assert feed_server.requests == [*before, "/a"]


def test_celery_beat_runs_the_sweep_as_a_task_of_its_own(checks, feed_server, user, add):
    from config.celery import app
    from feedchecks.tasks import retry_failed_feeds

    entry = app.conf.beat_schedule["retry-failed-feeds"]
    assert entry["task"] == retry_failed_feeds.name
    assert entry["schedule"] == checks.FEED_RETRY_SWEEP_INTERVAL
    add(user, feed_server.url("/missing"))
    age(feed_server.url("/missing"), checks.FEED_CHECK_INTERVAL + 1)
    assert retry_failed_feeds.delay().get() == 1
    assert feed_server.requests == ["/missing", "/missing"]


def test_the_sweep_does_nothing_with_checks_off(checks, feed_server, user, add):
    add(user, feed_server.url("/missing"))
    age(feed_server.url("/missing"), checks.FEED_CHECK_INTERVAL + 1)
    checks.FEED_CHECKS_ENABLED = False
    assert services.feed_checks_retry() == 0


# --- checks stored before the kinds existed -----------------------------------------------------

STORED = {
    "HTTP 404": "not_found",
    "HTTP 410": "not_found",
    "HTTP 502": "http_error",
    "Timed out": "timed_out",
    "Timed out resolving feeds.example": "timed_out",
    "feeds.example resolves to 10.0.0.1, which may not be fetched": "refused_network",
    "Cannot resolve feeds.invalid: [Errno -2] Name or service not known": "cannot_resolve",
    "Cannot connect to feeds.example: [Errno 111] Connection refused": "cannot_connect",
    "SSLCertVerificationError: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed": "tls",
    "The feed declares a DTD or entities: not read": "unsafe",
    "The feed is too complex to read: more than 10 s of CPU": "too_complex",
    "The feed could not be read (ValueError)": "not_a_feed",
    "More than 3 redirects": "redirects",
    "Redirect to a bad URL: no host": "redirects",
    "The check failed unexpectedly (KeyError)": "other",
}


def test_the_checks_stored_before_get_their_kind_from_their_error(back_to_latest):
    apps = migrate([("feedchecks", "0003_catalogue")])
    OldCheck = apps.get_model("feedchecks", "FeedCheck")
    for n, error in enumerate(STORED):
        OldCheck.objects.create(
            key_digest=f"{n:064x}", url=f"https://{n}.example/", result="error", error=error
        )
    OldCheck.objects.create(key_digest="f" * 64, url="https://ok.example/", result="guid")
    migrate([("feedchecks", "0005_feedcheck_failure_constraint")])
    kinds = dict(FeedCheck.objects.values_list("error", "failure"))
    assert kinds == {**STORED, "": ""}
