"""An import from another server run by a real Celery worker through a real Redis
(docs/imports.md): the broker's message, on the `imports` queue, carries the password sealed,
never in clear, and the worker opens it, imports, and leaves it in no log; a worker started
without -Q takes it as the full layout's feeds pool does (docs/operations.md, "Queues and
workers")."""

from typing import Any

import pytest
import redis

from episodes.models import EpisodeAction
from imports.models import Import
from imports.remote import Account
from imports.services import server_import_start
from tests.helpers import wait_until
from tests.imports.standins import PASSWORD, USER, standin

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("queues", ["", "feeds,imports"], ids=["every-queue", "feeds-pool"])
def test_a_worker_imports_with_the_password_it_was_sent_sealed(
    user: Any, broker: Any, worker_factory: Any, settings: Any, queues: str
) -> None:
    settings.IMPORT_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    with standin("mygpo") as server:
        upload = server_import_start(user=user, account=Account(server.url, USER, PASSWORD))
        queued = redis.Redis.from_url(broker.url).lrange("imports", 0, -1)
        assert len(queued) == 1
        assert PASSWORD.encode() not in queued[0]
        assert USER.encode() not in queued[0]
        worker = worker_factory(queues=queues, IMPORT_ALLOWED_NETWORKS="127.0.0.0/8")
        wait_until(
            lambda: Import.objects.get(pk=upload.pk).state in ("done", "failed"),
            60,
            worker.output,
        )
    done = Import.objects.get(pk=upload.pk)
    assert done.state == "done", done.error
    assert done.actions_imported == 8
    assert EpisodeAction.objects.filter(user=user).count() == 8
    assert PASSWORD not in worker.output()
