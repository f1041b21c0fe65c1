"""Feeds that drip one byte a second, fetched by real Celery workers, while another user deletes
a subscription (docs/operations.md, "Queues and workers").

Every fetch ends within FEED_FETCH_TIMEOUT (+1 s) whatever the server does, and in the
production layout (a worker pool for `feeds` beside one for `deletions,celery`) a deletion takes
its usual time while the drips go on. With one worker on every queue, a deletion can wait behind
the fetches, but no longer than their deadline.
"""

import time
from typing import Any

import pytest

from feedchecks.models import FeedCheck
from tests import servers
from tests.feedchecks.feedserver import FeedServer
from tests.helpers import subscribe, wait_until

pytestmark = pytest.mark.e2e

TIMEOUT = 3  # FEED_FETCH_TIMEOUT in the workers, seconds
WORKER_SETTINGS = {
    "FEED_FETCH_ALLOWED_NETWORKS": "127.0.0.0/8",
    "FEED_FETCH_TIMEOUT": str(TIMEOUT),
}
FEED = "https://example.com/show/{}.xml"


def timed_deletion(api: Any, guid: str, worker: servers.Worker) -> float:
    """Seconds from DELETE to the deletion's SUCCESS, as its user sees them."""
    started = time.monotonic()
    response = api.delete(f"/v1/subscriptions/{guid}")
    assert response.status_code == 202, response.content
    deletion = f"/v1/deletions/{response.json()['deletion_id']}"
    wait_until(lambda: api.get(deletion).json()["status"] == "SUCCESS", 120, worker.output)
    return time.monotonic() - started


def add_drips(api: Any, feed_server: FeedServer, count: int) -> None:
    """`count` feeds that send their headers with `Connection: close`, then one byte a second
    for a minute, added over the API: each asks for a check."""
    paths = [f"/drip{n}" for n in range(count)]
    for path in paths:
        feed_server.drip(path, every=1, close=True, seconds=60)
    entries = [{"feed_url": feed_server.url(path)} for path in paths]
    response = api.post("/v1/subscriptions", {"subscriptions": entries}, format="json")
    assert response.status_code == 200, response.content
    assert len(response.json()["success"]) == count


def assert_each_fetch_ended_within_the_deadline(
    feed_server: FeedServer, count: int, worker: servers.Worker
) -> list[float]:
    """The seconds each fetch took, as the worker recorded them (claimed to checked)."""
    # Long enough for every fetch, two at a time, had each kept to the deadline.
    wait_until(
        lambda: FeedCheck.objects.filter(checked__isnull=False).count() == count,
        (count / 2 + 1) * (TIMEOUT + 1) + 10,
        lambda: (
            f"every fetch to end, each within {TIMEOUT} s; the worker's log:\n{worker.output()}"
        ),
    )
    assert FeedCheck.objects.count() == count
    durations = []
    for check in FeedCheck.objects.all():
        assert check.claimed is not None
        assert check.checked is not None
        took = (check.checked - check.claimed).total_seconds()
        assert (check.result, check.error) == (FeedCheck.Result.ERROR, "Timed out"), check.url
        assert took < TIMEOUT + 1, (check.url, took)
        durations.append(took)
    # The server saw each fetch hang up within the deadline too.
    wait_until(lambda: len(feed_server.drips) == count, 5, "the server to see each client go")
    for started, ended in feed_server.drips:
        assert ended - started < TIMEOUT + 1, ended - started
    return durations


def test_drips_hold_up_neither_their_own_fetch_nor_a_deletion_in_the_production_layout(
    api, other_api, other_user, worker_factory, settings, feed_server
):
    """docs/operations.md's layout: `-Q feeds` (two processes, both held by drips, two more
    drips waiting) beside `-Q deletions,celery`. Another user's deletion sent meanwhile takes
    its usual time."""
    drips = 4
    guids = [str(subscribe(other_user, FEED.format(n)).guid) for n in range(3)]
    settings.FEED_CHECKS_ENABLED = True
    feeds = worker_factory(queues="feeds", name="feeds", beat=False, **WORKER_SETTINGS)
    deletions = worker_factory(queues="deletions,celery", name="deletions", **WORKER_SETTINGS)
    timed_deletion(other_api, guids[0], deletions)  # once the worker is up
    usual = timed_deletion(other_api, guids[1], deletions)

    add_drips(api, feed_server, drips)
    # Both of the feeds worker's processes are fetching.
    wait_until(lambda: len(feed_server.requests) >= 2, 60, feeds.output)
    took = timed_deletion(other_api, guids[2], deletions)

    assert len(feed_server.drips) < len(feed_server.requests), "no drip was still going"
    assert took < max(1.5, 3 * usual), (took, usual)
    fetches = assert_each_fetch_ended_within_the_deadline(feed_server, drips, feeds)
    # Each pool ran its own queue's tasks only (its log names each task it received).
    assert ".check_feed[" in feeds.output()
    assert ".process_deletion[" not in feeds.output()
    assert ".process_deletion[" in deletions.output()
    assert ".check_feed[" not in deletions.output()
    print(f"deletion: usual {usual:.2f} s, during the drips {took:.2f} s; fetches {fetches} s")


def test_with_one_worker_on_every_queue_a_deletion_waits_for_a_drip_no_longer_than_its_deadline(
    api, other_api, other_user, worker_factory, settings, feed_server
):
    """`celery -A config worker` without -Q, two processes, both held by a drip: the deletion
    waits for the first fetch to end, at its deadline."""
    drips = 2
    guids = [str(subscribe(other_user, FEED.format(n)).guid) for n in range(2)]
    settings.FEED_CHECKS_ENABLED = True
    worker = worker_factory(**WORKER_SETTINGS)
    timed_deletion(other_api, guids[0], worker)  # once the worker is up

    add_drips(api, feed_server, drips)
    wait_until(lambda: len(feed_server.requests) == drips, 60, worker.output)
    took = timed_deletion(other_api, guids[1], worker)

    assert took < TIMEOUT + 1.5, took
    fetches = assert_each_fetch_ended_within_the_deadline(feed_server, drips, worker)
    print(f"deletion behind the drips: {took:.2f} s; fetches {fetches} s")
