"""The deletion task and the sweep, run in-process against the real PostgreSQL."""

import time
from datetime import timedelta

import pytest
from django.db import OperationalError

from core import clock
from deletions import services
from deletions.models import Deletion
from deletions.tasks import process_deletion, sweep_deletions
from subscriptions.models import Subscription
from tests.helpers import at_once, subscribe

FEED = "https://example.com/rss"


@pytest.fixture
def pending(user, django_capture_on_commit_callbacks):
    """A subscription with a PENDING deletion whose task has not run."""
    sub = subscribe(user, FEED)
    with django_capture_on_commit_callbacks(execute=False):
        deletion = services.deletion_request(user=user, guid=sub.guid)
    return sub, deletion


def snapshot(sub):
    return Subscription.objects.filter(pk=sub.pk).values().get()


def test_the_task_deletes_and_succeeds(pending):
    sub, deletion = pending

    assert process_deletion.apply(args=(deletion.pk,)).get() == "SUCCESS"

    deletion.refresh_from_db()
    assert deletion.status == Deletion.Status.SUCCESS
    assert deletion.finished is not None
    assert Subscription.objects.get(pk=sub.pk).deleted is not None


def test_injected_failure_mid_cascade_rolls_everything_back(pending, monkeypatch):
    sub, deletion = pending
    before = snapshot(sub)

    real = services._finish

    def broken_finish(target, status, message):
        if status == Deletion.Status.SUCCESS:  # the subscription is tombstoned by now
            raise RuntimeError("disk on fire")
        return real(target, status, message)

    monkeypatch.setattr(services, "_finish", broken_finish)
    process_deletion.apply(args=(deletion.pk,))
    monkeypatch.undo()

    deletion.refresh_from_db()
    assert deletion.status == Deletion.Status.FAILURE
    assert deletion.message == services.ROLLED_BACK
    assert snapshot(sub) == before


def test_transient_errors_are_retried(pending, monkeypatch):
    _, deletion = pending
    real = services.subscription_mark_deleted
    calls = []

    def flaky(target, now):
        calls.append(1)
        if len(calls) < 3:
            raise OperationalError("could not serialize access")
        real(target, now)

    monkeypatch.setattr(services, "subscription_mark_deleted", flaky)
    process_deletion.apply(args=(deletion.pk,))

    deletion.refresh_from_db()
    assert len(calls) == 3
    assert deletion.status == Deletion.Status.SUCCESS


def test_transient_errors_end_as_failure_when_retries_run_out(pending, monkeypatch):
    sub, deletion = pending
    before = snapshot(sub)

    def down(target, now):
        raise OperationalError("server closed the connection")

    monkeypatch.setattr(services, "subscription_mark_deleted", down)
    process_deletion.apply(args=(deletion.pk,))

    deletion.refresh_from_db()
    assert deletion.status == Deletion.Status.FAILURE
    assert snapshot(sub) == before


def test_a_duplicate_message_is_a_no_op(pending):
    sub, deletion = pending
    assert process_deletion.apply(args=(deletion.pk,)).get() == "SUCCESS"
    deleted_at = Subscription.objects.get(pk=sub.pk).deleted

    assert process_deletion.apply(args=(deletion.pk,)).get() == "skipped"

    assert Subscription.objects.get(pk=sub.pk).deleted == deleted_at
    deletion.refresh_from_db()
    assert deletion.status == Deletion.Status.SUCCESS


@pytest.mark.django_db(transaction=True)
def test_concurrent_duplicate_messages_delete_once(user):
    sub = subscribe(user, FEED)
    # Written directly: deletion_request would run it in-process at commit.
    requested = sub.subscription_changed + timedelta(milliseconds=1)  # as deletion_request would
    deletion = Deletion.objects.create(
        user=user, subscription=sub, guid=sub.guid, requested=requested, last_sent=requested
    )

    def run() -> str:
        return services.deletion_process(deletion_id=deletion.pk)

    results = at_once(run, run, run, run)

    assert sorted(results) == ["SUCCESS", "skipped", "skipped", "skipped"]


def test_a_merged_subscription_fails_the_deletion_without_changes(pending, api):
    sub, deletion = pending
    other = subscribe(deletion.user, "https://other.example.com/rss")
    response = api.patch(
        f"/v1/subscriptions/{sub.guid}", {"new_guid": str(other.guid)}, format="json"
    )
    assert response.status_code == 200

    assert process_deletion.apply(args=(deletion.pk,)).get() == "FAILURE"

    deletion.refresh_from_db()
    assert deletion.message == services.MERGED
    assert Subscription.objects.get(pk=other.pk).deleted is None


def age(deletion, seconds):
    Deletion.objects.filter(pk=deletion.pk).update(
        last_sent=clock.now() - timedelta(seconds=seconds)
    )


def test_sweep_resends_stale_deletions(pending, settings, django_capture_on_commit_callbacks):
    _, deletion = pending
    settings.DELETION_RESEND_AFTER = 60
    fresh_sub = subscribe(deletion.user, "https://fresh.example.com/rss")
    with django_capture_on_commit_callbacks(execute=False):
        fresh = services.deletion_request(user=deletion.user, guid=fresh_sub.guid)
    age(deletion, 61)

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        assert sweep_deletions.apply().get() == {"resent": 1, "failed": 0}

    assert len(callbacks) == 1
    deletion.refresh_from_db()
    assert deletion.status == Deletion.Status.SUCCESS
    assert deletion.sends == 2
    fresh.refresh_from_db()
    assert fresh.status == Deletion.Status.PENDING


def test_sweep_fails_deletions_whose_messages_keep_getting_lost(pending, settings):
    sub, deletion = pending
    settings.DELETION_MAX_SENDS = 3
    Deletion.objects.filter(pk=deletion.pk).update(sends=3)
    age(deletion, settings.DELETION_RESEND_AFTER + 1)
    before = snapshot(sub)

    assert services.deletion_sweep() == {"resent": 0, "failed": 1}

    deletion.refresh_from_db()
    assert deletion.status == Deletion.Status.FAILURE
    assert "sent 3 times" in deletion.message
    assert snapshot(sub) == before


def test_a_deletion_that_keeps_killing_workers_ends_after_max_attempts(pending, settings):
    """Each start is counted before the work, so a worker killed mid-way still counts."""
    sub, deletion = pending
    settings.DELETION_MAX_ATTEMPTS = 3
    Deletion.objects.filter(pk=deletion.pk).update(attempts=3)  # three workers died on it
    before = snapshot(sub)

    assert services.deletion_process(deletion_id=deletion.pk) == "FAILURE"

    deletion.refresh_from_db()
    assert (
        deletion.message
        == "The deletion could not be processed after 3 attempts and was rolled back"
    )
    assert snapshot(sub) == before


def test_a_queued_deletion_is_not_failed_for_waiting(pending, settings):
    """Sends are bounded separately from worker starts: a long queue alone fails nothing."""
    _, deletion = pending
    settings.DELETION_MAX_ATTEMPTS = 1
    Deletion.objects.filter(pk=deletion.pk).update(sends=4)

    assert services.deletion_process(deletion_id=deletion.pk) == "SUCCESS"


def test_retry_reruns_a_failed_deletion(pending, monkeypatch, django_capture_on_commit_callbacks):
    sub, deletion = pending
    monkeypatch.setattr(services, "subscription_mark_deleted", lambda target, now: 1 / 0)
    process_deletion.apply(args=(deletion.pk,))
    monkeypatch.undo()
    deletion.refresh_from_db()
    assert deletion.status == Deletion.Status.FAILURE

    with django_capture_on_commit_callbacks(execute=True):
        assert services.deletion_retry(deletion_ids=[deletion.pk]) == 1

    deletion.refresh_from_db()
    assert deletion.status == Deletion.Status.SUCCESS
    assert Subscription.objects.get(pk=sub.pk).deleted is not None


def test_retry_keeps_the_rule_that_a_later_resubscribe_wins(
    pending, api, django_capture_on_commit_callbacks
):
    sub, deletion = pending
    time.sleep(0.002)
    again = api.post("/v1/subscriptions", {"subscriptions": [{"feed_url": FEED}]}, format="json")
    assert again.status_code == 200
    assert process_deletion.apply(args=(deletion.pk,)).get() == "FAILURE"

    with django_capture_on_commit_callbacks(execute=True):
        services.deletion_retry(deletion_ids=[deletion.pk])

    deletion.refresh_from_db()
    assert deletion.status == Deletion.Status.FAILURE
    assert deletion.message == services.RESUBSCRIBED
    assert api.get(f"/v1/subscriptions/{sub.guid}").status_code == 200


def test_a_merge_after_the_request_wins_over_a_pending_deletion_of_the_target(pending, api):
    target, deletion = pending
    other = subscribe(deletion.user, "https://other.example.com/rss")
    time.sleep(0.002)
    response = api.patch(
        f"/v1/subscriptions/{other.guid}", {"new_guid": str(target.guid)}, format="json"
    )
    assert response.status_code == 200

    assert process_deletion.apply(args=(deletion.pk,)).get() == "FAILURE"

    assert api.get(f"/v1/subscriptions/{other.guid}").status_code == 200


def test_retry_skips_successful_deletions(pending):
    _, deletion = pending
    process_deletion.apply(args=(deletion.pk,))
    assert services.deletion_retry(deletion_ids=[deletion.pk]) == 0


def test_the_sweep_resends_an_unsent_deletion_at_once_and_a_lost_one_after_resend_after(
    user, settings, django_capture_on_commit_callbacks
):
    """Unsent: the broker refused it. Lost: sent DELETION_RESEND_AFTER ago and not done (tasks
    run in-process here, so the deletions' queue is empty). Recent: left alone."""
    settings.DELETION_RESEND_AFTER = 60
    subs = [subscribe(user, f"https://example.com/{name}") for name in ("a", "b", "c")]
    with django_capture_on_commit_callbacks(execute=False):
        unsent, lost, recent = (services.deletion_request(user=user, guid=sub.guid) for sub in subs)
    Deletion.objects.filter(pk=unsent.pk).update(last_sent=None)
    age(lost, 61)
    age(recent, 30)

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        assert services.deletion_sweep() == {"resent": 2, "failed": 0}

    assert len(callbacks) == 2
    sends = dict(Deletion.objects.values_list("pk", "sends"))
    assert (sends[unsent.pk], sends[lost.pk], sends[recent.pk]) == (2, 2, 1)
