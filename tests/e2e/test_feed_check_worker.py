"""Feed checks end to end: adds over the API, one message on a real Redis, a real Celery worker
fetching feeds from a local server and changing the subscriptions (docs/api.md, "Feed identity")."""

import pytest

from feedchecks.models import FeedCheck
from subscriptions.models import Subscription
from tests.feedchecks.feedserver import GUID, rss
from tests.helpers import wait_until

pytestmark = pytest.mark.e2e


def test_a_worker_learns_each_added_feeds_guid_and_move(api, worker_factory, settings, feed_server):
    settings.FEED_CHECKS_ENABLED = True
    feed_server.feed("/guid", rss(guid=GUID))
    feed_server.redirect("/old", feed_server.url("/new"), status=308)
    feed_server.feed("/new", rss())
    feed_server.feed("/plain", rss())
    worker = worker_factory(FEED_FETCH_ALLOWED_NETWORKS="127.0.0.0/8")

    # A guid the client sent is authoritative: that feed is not fetched.
    sent = "2d8bb39b-8d34-48d4-b223-a0d01eb27d71"
    entries = [{"feed_url": feed_server.url(path)} for path in ("/guid", "/old")]
    entries.append({"feed_url": feed_server.url("/plain"), "guid": sent})

    response = api.post("/v1/subscriptions", {"subscriptions": entries}, format="json")

    assert response.status_code == 200, response.content
    computed, moved, _ = (entry["guid"] for entry in response.json()["success"])

    def learned() -> bool:
        by_computed = api.get(f"/v1/subscriptions/{computed}").json()
        by_moved = api.get(f"/v1/subscriptions/{moved}").json()
        return by_computed.get("new_guid") == GUID and by_moved["feed_url"] == feed_server.url(
            "/new"
        )

    wait_until(learned, 60, worker.output)
    assert sorted(feed_server.requests) == ["/guid", "/new", "/old"]
    assert FeedCheck.objects.count() == 2
    assert str(Subscription.objects.get(feed_url=feed_server.url("/plain")).guid) == sent


def test_an_add_while_the_broker_is_down_is_answered_and_kept(
    api, broker, settings, caplog, django_capture_on_commit_callbacks
):
    """A check is an improvement, not a promise: a broker that cannot take it loses it, logged,
    and the add that asked for it is answered as usual."""
    settings.FEED_CHECKS_ENABLED = True
    broker.stop()

    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(
            "/v1/subscriptions",
            {"subscriptions": [{"feed_url": "https://unchecked.example/feed"}]},
            format="json",
        )

    assert response.status_code == 200, response.content
    assert Subscription.objects.filter(feed_url="https://unchecked.example/feed").exists()
    assert "Could not send feed checks" in caplog.text


def test_a_worker_records_an_error_for_a_broken_status_line_and_for_a_feed_too_complex_to_read(
    api, worker_factory, settings, feed_server
):
    """Neither leaves its feed "under way": a NUL in the status line made the task fail before it
    recorded anything, and 3 MiB of unclosed tags held the worker for a minute."""
    settings.FEED_CHECKS_ENABLED = True
    feed_server.raw("/nul", b"HTTP/1.1 2\x0000 OK\r\nContent-Length: 0\r\n\r\n")
    feed_server.feed("/tags", b"<rss><channel>" + b"<a>" * (1024 * 1024))
    worker = worker_factory(FEED_FETCH_ALLOWED_NETWORKS="127.0.0.0/8")
    entries = [{"feed_url": feed_server.url(path)} for path in ("/nul", "/tags")]

    response = api.post("/v1/subscriptions", {"subscriptions": entries}, format="json")

    assert response.status_code == 200, response.content
    wait_until(
        lambda: FeedCheck.objects.filter(checked__isnull=False).count() == 2, 60, worker.output
    )
    errors = dict(FeedCheck.objects.values_list("url", "error"))
    assert errors == {
        feed_server.url("/nul"): "BadStatusLine: HTTP/1.1 2\ufffd00 OK",
        feed_server.url("/tags"): (
            "The feed is too complex to read: 1,048,578 tags, more than 250,000"
        ),
    }
    assert set(FeedCheck.objects.values_list("result", flat=True)) == {FeedCheck.Result.ERROR}
