"""Uploads and downloads at once, on PostgreSQL with real threads: a download's timestamp, sent
back as it is or plus one, misses no action, not even one committed while the download ran; and
concurrent uploads store every action, their stamps never going back."""

import threading
import time
from typing import Any

import pytest
from django.db import connection
from rest_framework.test import APIClient

from episodes import selectors, services
from episodes.models import EpisodeAction
from tests.helpers import basic_app

pytestmark = pytest.mark.usefixtures("transactional_db")

EPISODES = "/api/2/episodes/alice.json"
# Between a downloader's requests: longer than SQLite's longest wait between two tries for its
# lock (100 ms), so that on the home slice a request waiting for it gets it when the stalled one
# ends, instead of losing it again and again to the downloader that just let go, past the busy
# timeout (a 503, "database is locked", seen once on a loaded machine).
PAUSE = 0.25


def client() -> APIClient:
    return basic_app("alice")


def action(device: str, n: int) -> dict[str, Any]:
    return {
        "podcast": "https://race.example.com/feed",
        "episode": f"https://race.example.com/{device}/{n}.mp3",
        "action": "play",
        "position": n,
        "device": device,
    }


def run(threads: list[threading.Thread], errors: list[BaseException]) -> None:
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors


@pytest.mark.parametrize("slow", [services, selectors], ids=["slow upload", "slow download"])
def test_downloaders_sending_back_t_or_t_plus_one_see_every_concurrent_upload(
    alice, monkeypatch, slow
):
    # One side stalls where it computes its timestamp: an upload that stays open after its
    # actions are stamped, or a download whose clock runs on; a download that answered a later
    # timestamp than an upload's actions would lose them for good.
    answer_timestamp = slow.sync_timestamp

    def stalled(latest: Any, **clock: Any) -> int:
        time.sleep(2.5)  # longer than the clock skew the timestamp allows for
        return answer_timestamp(latest, **clock)  # `now`, when read before the lock

    monkeypatch.setattr(slow, "sync_timestamp", stalled)
    written: list[str] = []
    done = threading.Event()
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            app = client()
            for n in range(3):
                response = app.post(EPISODES, [action("writer", n)], format="json")
                assert response.status_code == 200, response.content
                written.append(action("writer", n)["episode"])
        except BaseException as exc:
            errors.append(exc)
        finally:
            done.set()
            connection.close()

    seen: dict[int, set[str]] = {0: set(), 1: set()}

    def downloader(plus: int) -> None:
        try:
            app = client()
            since, finished = 0, False
            while not finished:
                finished = done.is_set()  # one more download after the writer is done
                response = app.get(EPISODES, {"since": since})
                assert response.status_code == 200, response.content
                answer = response.json()
                seen[plus].update(a["episode"] for a in answer["actions"])
                since = answer["timestamp"] + plus
                time.sleep(PAUSE)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=writer)]
    threads += [threading.Thread(target=downloader, args=(plus,)) for plus in (0, 1)]
    run(threads, errors)
    assert len(written) == 3
    assert seen[0] >= set(written)
    assert seen[1] >= set(written)


def test_concurrent_uploads_store_every_action_in_the_order_they_were_received(alice):
    errors: list[BaseException] = []

    def uploader(device: str) -> None:
        try:
            app = client()
            for batch in range(3):
                body = [action(device, batch * 400 + n) for n in range(400)]
                response = app.post(EPISODES, body, format="json")
                assert response.status_code == 200, response.content
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    run([threading.Thread(target=uploader, args=(f"d{i}",)) for i in range(4)], errors)

    # Each upload took one second, never one before an upload stored before it.
    stamps = list(EpisodeAction.objects.order_by("id").values_list("received", flat=True))
    assert len(stamps) == 4 * 3 * 400
    assert stamps == sorted(stamps)
