"""A pull's timestamp, sent back as it is or plus one, misses no change, not even one committed
while the pull was running (docs/gpodder-api.md, "Timestamps"). Real threads on PostgreSQL."""

import threading
import time
from typing import Any

import pytest
from django.db import connection
from rest_framework.test import APIClient

from subscriptions import services
from tests.helpers import basic

pytestmark = pytest.mark.usefixtures("transactional_db")

WRITES = 4


def test_pullers_sending_back_t_or_t_plus_one_see_every_concurrent_write(alice, monkeypatch):
    # Each write stays open a while after it has been stamped: a pull that ran meanwhile and
    # answered a later timestamp would lose it for good.
    check_feeds = services._check_feeds_later

    def slow_commit(*args: Any, **kwargs: Any) -> None:
        check_feeds(*args, **kwargs)
        time.sleep(2.5)  # longer than the clock skew the timestamp allows for

    monkeypatch.setattr(services, "_check_feeds_later", slow_commit)
    written: list[str] = []
    done = threading.Event()
    errors: list[BaseException] = []

    def client() -> APIClient:
        app = APIClient()
        app.credentials(HTTP_AUTHORIZATION=basic("alice"))
        return app

    def writer() -> None:
        try:
            app = client()
            for i in range(WRITES):
                url = f"https://race.example.com/{i}.xml"
                response = app.post(
                    "/api/2/subscriptions/alice/writer.json", {"add": [url]}, format="json"
                )
                assert response.status_code == 200, response.content
                written.append(url)
        except BaseException as exc:
            errors.append(exc)
        finally:
            done.set()
            connection.close()

    seen: dict[int, set[str]] = {0: set(), 1: set()}

    def puller(plus: int) -> None:
        try:
            app = client()
            since = 0
            finished = False
            while not finished:
                finished = done.is_set()  # one more pull after the writer is done
                response = app.get(f"/api/2/subscriptions/alice/puller{plus}.json?since={since}")
                assert response.status_code == 200, response.content
                answer = response.json()
                seen[plus].update(answer["add"])
                since = answer["timestamp"] + plus
                time.sleep(0.02)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=writer)]
    threads += [threading.Thread(target=puller, args=(plus,)) for plus in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    assert len(written) == WRITES
    assert seen[0] >= set(written)
    assert seen[1] >= set(written)
