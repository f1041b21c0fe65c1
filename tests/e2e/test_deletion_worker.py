"""Deletions end to end: the API, a real Redis and real Celery worker processes."""

import time
from datetime import timedelta

import psycopg
import pytest
import redis
from django.contrib.auth import get_user_model
from django.db import connection, transaction

from core import clock
from deletions import services
from deletions.models import Deletion
from episodes import services as episodes
from episodes.actions import actions_parsed
from episodes.models import EpisodeAction
from tests.helpers import subscribe, wait_until

pytestmark = pytest.mark.e2e

FEED = "https://example.com/show/{}.xml"


def deletion_status(api, deletion_id):
    response = api.get(f"/v1/deletions/{deletion_id}")
    assert response.status_code == 200
    return response.json()["status"]


def request_deletions(api, user, count):
    guids = [str(subscribe(user, FEED.format(n)).guid) for n in range(count)]
    ids = []
    for guid in guids:
        response = api.delete(f"/v1/subscriptions/{guid}")
        assert response.status_code == 202, response.content
        ids.append(response.json()["deletion_id"])
    return guids, ids


def counts(ids):
    result: dict[str, int] = {}
    for status in Deletion.objects.filter(pk__in=ids).values_list("status", flat=True):
        result[status] = result.get(status, 0) + 1
    return result


def test_delete_pending_then_success_through_the_api(api, user, worker_factory):
    guids, ids = request_deletions(api, user, 1)
    assert deletion_status(api, ids[0]) == "PENDING"  # no worker yet

    worker = worker_factory()

    wait_until(lambda: deletion_status(api, ids[0]) == "SUCCESS", 60, worker.output)
    assert api.get(f"/v1/subscriptions/{guids[0]}").status_code == 410


def test_commit_sends_exactly_one_task_and_rollback_none(user, broker, transactional_db):
    queue = redis.Redis.from_url(broker.url)
    rolled_back = subscribe(user, FEED.format("rolled-back"))
    committed = subscribe(user, FEED.format("committed"))

    class Abort(Exception):
        pass

    try:
        with transaction.atomic():
            services.deletion_request(user=user, guid=rolled_back.guid)
            assert queue.llen("deletions") == 0  # nothing is sent inside the transaction
            raise Abort
    except Abort:
        pass
    assert queue.llen("deletions") == 0
    assert not Deletion.objects.exists()

    services.deletion_request(user=user, guid=committed.guid)
    assert queue.llen("deletions") == 1


def test_worker_killed_during_100_deletions(api, user, worker_factory):
    guids, ids = request_deletions(api, user, 100)  # queued while no worker runs
    first = worker_factory()
    wait_until(lambda: counts(ids).get("SUCCESS", 0) >= 1, 60, first.output)

    first.kill()  # SIGKILL to the whole worker, children included, mid-way
    left = counts(ids).get("PENDING", 0)
    assert left > 0, "the worker finished before it was killed: nothing was tested"
    second = worker_factory()

    wait_until(lambda: counts(ids).get("PENDING", 0) == 0, 120, second.output)
    final = counts(ids)
    assert sum(final.values()) == 100
    assert set(final) <= {"SUCCESS", "FAILURE"}
    assert final.get("SUCCESS", 0) == 100, (final, left)
    for guid in guids[:5]:
        assert api.get(f"/v1/subscriptions/{guid}").status_code == 410


def test_a_killed_workers_messages_are_redelivered_without_the_sweep(api, user, worker_factory):
    """Late acknowledgement alone saves what a killed worker was doing: with the sweep out of
    the picture, Redis hands its unacknowledged messages out again once the visibility timeout
    (four times the task time limit: 12 s here) has passed, at the next 10 s scan.

    The test holds the user's row lock, so the worker's two processes are both mid-task, and
    its prefetch is full, when it is killed. (A worker killed while free could die holding a
    message it has popped but not yet recorded as unacknowledged: that is what the sweep is for.)
    """
    quiet_sweep = {
        "DELETION_RESEND_AFTER": "100000",
        "CELERY_TASK_TIME_LIMIT": "3",
    }
    _, ids = request_deletions(api, user, 30)
    table = get_user_model()._meta.db_table
    with (
        psycopg.connect(**database_params()) as blocker,
        psycopg.connect(**database_params(), autocommit=True) as watcher,
    ):
        blocker.execute(f'SELECT 1 FROM "{table}" WHERE id = %s FOR UPDATE', [user.pk])
        first = worker_factory(**quiet_sweep)
        wait_until(lambda: lock_waiters(watcher) == 2, 60, first.output)
        first.kill()
        blocker.rollback()
    assert counts(ids) == {"PENDING": 30}
    second = worker_factory(**quiet_sweep)

    wait_until(lambda: counts(ids).get("PENDING", 0) == 0, 120, second.output)
    assert counts(ids) == {"SUCCESS": 30}
    assert Deletion.objects.filter(pk__in=ids, sends__gt=1).count() == 0  # nothing was re-sent


def lock_waiters(conn: psycopg.Connection) -> int:
    """Sessions of this database waiting for a lock (another xdist worker's are elsewhere); read
    in autocommit, as a transaction sees one snapshot of the statistics."""
    query = (
        "SELECT count(*) FROM pg_stat_activity"
        " WHERE wait_event_type = 'Lock' AND datname = current_database()"
    )
    return conn.execute(query).fetchall()[0][0]


def database_params():
    """The test database's, for this test's own connections: never prepared, which a pooler in
    transaction mode between them and the server cannot keep (make test's pooled slice)."""
    db = connection.settings_dict
    return {
        "host": db["HOST"],
        "port": db["PORT"],
        "user": db["USER"],
        "dbname": db["NAME"],
        "prepare_threshold": None,
    }


def test_a_worker_deletes_the_subscriptions_episode_actions_with_it(api, user, worker_factory):
    gone = subscribe(user, FEED.format("gone"))
    subscribe(user, FEED.format("kept"))
    sent = [
        {"podcast": FEED.format(name), "episode": f"https://cdn.example.com/{name}/{n}.mp3",
         "action": "play", "position": n}
        for name in ("gone", "kept") for n in range(50)
    ]  # fmt: skip
    episodes.actions_upload(user=user, actions=actions_parsed(sent, limit=100))
    response = api.delete(f"/v1/subscriptions/{gone.guid}")
    assert response.status_code == 202, response.content

    worker = worker_factory()

    deletion_id = response.json()["deletion_id"]
    wait_until(lambda: deletion_status(api, deletion_id) == "SUCCESS", 60, worker.output)
    left = set(EpisodeAction.objects.values_list("podcast", flat=True))
    assert left == {FEED.format("kept")}
    assert EpisodeAction.objects.count() == 50


def test_a_worker_deletes_a_whole_account_and_nothing_else(user, other_user, worker_factory):
    for owner in (user, other_user):
        subscribe(owner, FEED.format("shared"))
        sent = [{"podcast": FEED.format("shared"), "episode": f"https://e/{n}", "action": "new"}
                for n in range(20)]  # fmt: skip
        episodes.actions_upload(user=owner, actions=actions_parsed(sent, limit=100))
    with transaction.atomic():
        requested = services.account_deletion_request(user=user)
    # Signed out at once, before any worker runs.
    assert not get_user_model().objects.get(pk=user.pk).is_active

    worker = worker_factory()

    def ended() -> bool:
        requested.refresh_from_db()
        return requested.status != "PENDING"

    wait_until(ended, 60, worker.output)
    assert requested.status == "SUCCESS", requested.message
    assert not get_user_model().objects.filter(pk=user.pk).exists()
    assert set(EpisodeAction.objects.values_list("user_id", flat=True)) == {other_user.pk}
    assert EpisodeAction.objects.count() == 20


# The sweep's settings as shipped: the worker reads their defaults.
DEFAULT_SWEEP = {"DELETION_RESEND_AFTER": None, "DELETION_SWEEP_INTERVAL": None}
# The longest a person may see PENDING after the broker or a worker is back.
HEALED_WITHIN = 120


def test_with_the_defaults_deletions_sent_while_the_broker_was_down_end_within_two_minutes(
    api, user, worker_factory, broker
):
    worker = worker_factory(**DEFAULT_SWEEP)
    guids = [str(subscribe(user, FEED.format(n)).guid) for n in range(20)]
    broker.stop()
    ids = []
    for guid in guids:
        response = api.delete(f"/v1/subscriptions/{guid}")
        assert response.status_code == 202, response.content
        ids.append(response.json()["deletion_id"])
    # Each send failed, and says so.
    assert Deletion.objects.filter(pk__in=ids, last_sent__isnull=True).count() == 20

    broker.start()
    back = time.monotonic()
    wait_until(lambda: counts(ids) == {"SUCCESS": 20}, HEALED_WITHIN, worker.output)
    healed = time.monotonic() - back
    print(f"broker back -> last SUCCESS: {healed:.1f} s")
    assert healed < HEALED_WITHIN
    assert Deletion.objects.filter(pk__in=ids, sends__gt=2).count() == 0


def test_with_the_defaults_a_killed_workers_deletions_end_within_two_minutes(
    api, user, worker_factory
):
    _, ids = request_deletions(api, user, 100)  # queued while no worker runs
    first = worker_factory(**DEFAULT_SWEEP)
    wait_until(lambda: counts(ids).get("SUCCESS", 0) >= 1, 60, first.output)
    first.kill()  # SIGKILL to the whole worker, beat and children included, mid-way
    assert counts(ids).get("PENDING", 0) > 0, "the worker finished before it was killed"

    second = worker_factory(**DEFAULT_SWEEP)
    back = time.monotonic()
    wait_until(lambda: counts(ids).get("PENDING", 0) == 0, HEALED_WITHIN, second.output)
    healed = time.monotonic() - back
    print(f"worker back -> last SUCCESS: {healed:.1f} s")
    assert counts(ids) == {"SUCCESS": 100}
    assert healed < HEALED_WITHIN
    # Only what the killed worker held was sent again.
    assert Deletion.objects.filter(pk__in=ids, sends__gt=1).count() <= 4


def test_deletions_waiting_in_the_queue_are_not_sent_again_lost_ones_are(
    api, user, broker, settings, transactional_db
):
    """No worker runs: the messages wait in Redis, and the sweep leaves them be however old;
    once they are gone from the queue without being done (lost), it sends them again."""
    _, ids = request_deletions(api, user, 5)
    queue = redis.Redis.from_url(broker.url)
    assert queue.llen("deletions") == 5
    Deletion.objects.filter(pk__in=ids).update(
        last_sent=clock.now() - timedelta(seconds=settings.DELETION_RESEND_AFTER + 1)
    )

    assert services.deletion_sweep() == {"resent": 0, "failed": 0}
    assert queue.llen("deletions") == 5

    queue.delete("deletions")  # lost
    assert services.deletion_sweep() == {"resent": 5, "failed": 0}
    assert queue.llen("deletions") == 5
