"""The home server's schedule (home.scheduler): what Celery beat runs in the full layout, run by
a thread of the web process."""

import threading
import time
from datetime import timedelta
from typing import Any

import pytest

from deletions.models import Deletion
from home import scheduler
from subscriptions.models import Subscription
from tests.helpers import subscribe


@pytest.mark.django_db(transaction=True)
def test_the_schedule_takes_up_a_deletion_a_stop_cut_short(user: Any, settings: Any) -> None:
    """A deletion requested but never run (the process stopped before it): the sweep runs it."""
    settings.DELETION_SWEEP_INTERVAL = 0.2
    settings.DELETION_RESEND_AFTER = 0
    sub = subscribe(user, "https://cut.example/feed.xml")
    deletion = Deletion.objects.create(
        user=user, subscription=sub, guid=sub.guid, requested=sub.created + timedelta(seconds=1)
    )
    stop = threading.Event()
    thread = scheduler.start(stop)
    try:
        deadline = time.monotonic() + 30
        while Deletion.objects.get(pk=deletion.pk).status != Deletion.Status.SUCCESS:
            assert time.monotonic() < deadline, Deletion.objects.get(pk=deletion.pk).status
            time.sleep(0.1)
    finally:
        stop.set()
        thread.join(timeout=10)
    assert not thread.is_alive()
    assert Subscription.objects.get(pk=sub.pk).deleted is not None


def test_every_job_has_a_period_and_memory_is_handed_back() -> None:
    names = {name for name, period, _ in scheduler.jobs() if period > 0}
    assert names == {
        "deletion sweep",
        "failed feeds retried",
        "expired sessions and tokens",
        "memory given back",
    }
    scheduler._give_back_memory()  # glibc's malloc_trim here; nothing where there is none
