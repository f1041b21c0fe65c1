"""The request throttle on a real Redis, as production runs it: one count for every process."""

import logging
import socket
import threading
import time

import pytest
import redis

from api import throttles
from api.throttles import UserThrottle
from tests.servers import free_port

pytestmark = pytest.mark.e2e

ADD = "/v1/subscriptions"
BODY = {"subscriptions": [{"feed_url": "https://podnews.net/rss"}]}


@pytest.fixture
def redis_cache(redis_server, settings):
    if redis_server.process is None:
        redis_server.start()
    settings.REDIS_CACHE_URL = redis_server.url
    throttles.forget()
    client = redis.Redis.from_url(redis_server.url)
    client.flushdb()
    yield client
    throttles.forget()


def test_the_user_rate_is_counted_in_redis_and_answers_429_naming_it(
    api, other_api, redis_cache, monkeypatch
):
    monkeypatch.setattr(UserThrottle, "THROTTLE_RATES", {"user": "3/min", "login": "10/min"})
    for _ in range(2):
        assert api.post(ADD, BODY, format="json").status_code == 200
    throttles.forget()  # another web process: a client of its own, the same count
    assert api.post(ADD, BODY, format="json").status_code == 200

    response = api.post(ADD, BODY, format="json")

    assert response.status_code == 429
    assert response.json()["code"] == "429"
    assert response.json()["message"].startswith(
        "Rate limit exceeded: at most 3/min requests per user."
    )
    assert 0 < int(response["Retry-After"]) <= 60
    [key] = redis_cache.keys("throttle_user_*")
    assert int(redis_cache.get(key)) == 4
    assert 0 < redis_cache.ttl(key) <= 60  # counts expire with their window
    assert other_api.post(ADD, BODY, format="json").status_code == 200


def test_a_counter_without_an_expiry_gets_one(redis_cache):
    """A counter that lost its expiry would refuse its client for good; the count gives it one."""
    redis_cache.set("throttle_user_1", 5)

    count, left = throttles.count_request("throttle_user_1", 60)

    assert count == 6
    assert left == 60
    assert 55_000 < redis_cache.pttl("throttle_user_1") <= 60_000


def test_the_count_survives_a_flush_of_redis_scripts(redis_cache):
    """After a Redis restart or SCRIPT FLUSH the counting script is sent again, not failed."""
    assert throttles.count_request("throttle_user_2", 60)[0] == 1
    redis_cache.script_flush()

    assert throttles.count_request("throttle_user_2", 60)[0] == 2


@pytest.fixture
def redis_away(settings, monkeypatch):
    """A Redis that does not answer: it accepts connections and never replies."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    settings.REDIS_CACHE_URL = f"redis://127.0.0.1:{silent.getsockname()[1]}/1"
    throttles.forget()
    yield
    throttles.forget()
    silent.close()


def test_while_redis_does_not_answer_each_process_counts_on_its_own(
    api, redis_away, monkeypatch, caplog
):
    """Not a sync refused, nor requests held one after the other; still throttled, and logged
    once."""
    monkeypatch.setattr(UserThrottle, "THROTTLE_RATES", {"user": "4/min", "login": "10/min"})
    with caplog.at_level(logging.WARNING, logger="api.throttles"):
        started = time.monotonic()
        statuses = [api.get(ADD).status_code for _ in range(5)]
        elapsed = time.monotonic() - started

    assert statuses == [200, 200, 200, 200, 429]
    assert elapsed < 3  # one wait for Redis's timeout (1 s), not five
    warnings = [r for r in caplog.records if "Redis did not answer" in r.getMessage()]
    assert len(warnings) == 1


def test_under_half_its_rate_a_clients_requests_reach_redis_together(
    api, redis_cache, settings, monkeypatch
):
    """Counted in the process while the count is at most half the rate; from there on each one
    is counted in Redis at once, so the refusal comes exactly at the limit."""
    monkeypatch.setattr(UserThrottle, "THROTTLE_RATES", {"user": "10/min", "login": "10/min"})
    settings.THROTTLE_SYNC_SECONDS = 3600
    key = None
    counts = []
    for _ in range(10):
        assert api.get(ADD).status_code == 200
        [key] = redis_cache.keys("throttle_user_*")
        counts.append(int(redis_cache.get(key)))

    refused = api.get(ADD)

    # The rate is 10/min: the first request is sent (nothing was yet), the next four are held,
    # the sixth sends them with itself.
    assert counts == [1, 1, 1, 1, 1, 6, 7, 8, 9, 10]
    assert refused.status_code == 429
    assert int(redis_cache.get(key)) == 11
    assert 0 < int(refused["Retry-After"]) <= 60


def test_login_attempts_are_counted_in_redis_at_once(anon, redis_cache, settings):
    """A password guesser must not gain what the processes hold unsent."""
    settings.THROTTLE_SYNC_SECONDS = 3600
    counts = []
    for _ in range(3):
        anon.post("/v1/auth/login", {"username": "someone", "password": "guess"}, format="json")
        [key] = redis_cache.keys("throttle_login_*")
        counts.append(int(redis_cache.get(key)))

    assert counts == [1, 2, 3]


def test_held_counts_reach_redis_with_the_first_request_after_the_interval(
    api, other_api, redis_cache, settings
):
    settings.THROTTLE_SYNC_SECONDS = 3600  # however slow the machine, these two are held
    api.get(ADD)
    api.get(ADD)
    other_api.get(ADD)
    assert sorted(int(redis_cache.get(key)) for key in redis_cache.keys("throttle_user_*")) == [1]

    settings.THROTTLE_SYNC_SECONDS = 0.2
    time.sleep(0.3)
    api.get(ADD)

    # Everything the process held went in that one round trip, the other client's included.
    assert sorted(int(redis_cache.get(key)) for key in redis_cache.keys("throttle_user_*")) == [
        1,
        3,
    ]


def test_a_process_learns_the_others_counts_when_it_sends_its_own(redis_cache, settings):
    """Two web processes: each decides on what Redis answered it last, plus what it holds."""
    settings.THROTTLE_SYNC_SECONDS = 3600
    one, other = throttles.SharedCounts(), throttles.SharedCounts()
    key = "throttle_user_processes"

    assert [one.count(key, 60, 50)[0] for _ in range(5)] == [1, 2, 3, 4, 5]  # 4 held
    assert other.count(key, 60, 50)[0] == 2  # sent, and answered what Redis had
    assert one.count(key, 60, 5)[0] == 7  # over its local limit: sends its 4 and itself

    assert int(redis_cache.get(key)) == 7
    assert other.count(key, 60, 0)[0] == 8


def test_no_count_is_lost_between_threads(redis_cache, settings):
    """gunicorn's threads share a process's counts: every request reaches Redis once."""
    settings.THROTTLE_SYNC_SECONDS = 0.01
    counts = throttles.SharedCounts()
    keys = [f"throttle_user_thread{i}" for i in range(3)]

    def send(n: int) -> None:
        for i in range(n):
            counts.count(keys[i % 3], 60, 10**9)

    threads = [threading.Thread(target=send, args=(300,)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    time.sleep(0.02)
    for key in keys:
        counts.count(key, 60, 0)  # sends whatever is still held

    assert [int(redis_cache.get(key)) for key in keys] == [401, 401, 401]


def test_a_closed_window_starts_again_from_what_redis_answers(redis_cache, settings):
    settings.THROTTLE_SYNC_SECONDS = 3600
    counts = throttles.SharedCounts()
    assert counts.count("throttle_user_short", 1, 0) == (1, pytest.approx(1, abs=0.1))
    time.sleep(1.1)  # the key expired in Redis, and the process forgot its answer

    assert counts.count("throttle_user_short", 1, 0)[0] == 1


def test_requests_held_for_a_window_that_closed_are_not_charged_to_the_next(redis_cache, settings):
    """A quiet process sends what it held with its next request, maybe long after: requests of
    a window that has closed since count no more, neither in the process nor in Redis."""
    settings.THROTTLE_SYNC_SECONDS = 3600
    counts = throttles.SharedCounts()
    counts.count("throttle_user_first", 60, 0)  # a round trip, after which requests are held
    for key in ("throttle_user_again", "throttle_user_gone"):
        assert counts.count(key, 1, 50)[0] == 1
        assert counts.count(key, 1, 50)[0] == 2
    time.sleep(1.1)

    assert counts.count("throttle_user_again", 1, 50)[0] == 1  # a new window
    counts.count("throttle_user_first", 60, 0)  # sends all it holds

    assert int(redis_cache.get("throttle_user_again")) == 1
    assert redis_cache.get("throttle_user_gone") is None


def test_a_window_opened_in_the_process_closes_in_redis_when_it_does_there(redis_cache, settings):
    """Held requests that open a window bring its time left to Redis, not a whole period."""
    settings.THROTTLE_SYNC_SECONDS = 3600
    counts = throttles.SharedCounts()
    counts.count("throttle_user_first", 60, 0)  # a round trip, after which requests are held
    assert counts.count("throttle_user_late", 3, 50) == (1, pytest.approx(3, abs=0.1))
    time.sleep(1)

    counts.count("throttle_user_first", 60, 0)

    assert int(redis_cache.get("throttle_user_late")) == 1
    assert 1_000 < redis_cache.pttl("throttle_user_late") <= 2_000  # not a whole 3 s


def test_counts_held_when_redis_fails_are_sent_when_it_answers_again(redis_cache, settings):
    settings.THROTTLE_SYNC_SECONDS = 3600
    counts = throttles.SharedCounts()
    counts.count("throttle_user_first", 60, 0)
    for _ in range(3):
        counts.count("throttle_user_held", 60, 50)
    reachable = settings.REDIS_CACHE_URL
    settings.REDIS_CACHE_URL = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    throttles.forget()  # a new client, to the address that refuses
    with pytest.raises(redis.ConnectionError):
        counts.count("throttle_user_first", 60, 0)
    settings.REDIS_CACHE_URL = reachable
    throttles.forget()

    counts.count("throttle_user_first", 60, 0)

    assert int(redis_cache.get("throttle_user_held")) == 3


def test_an_answer_that_comes_back_late_does_not_replace_a_later_count(redis_cache, settings):
    """Two threads' round trips may return in either order."""
    settings.THROTTLE_SYNC_SECONDS = 3600
    counts = throttles.SharedCounts()
    counts.count("throttle_user_first", 60, 0)  # a round trip, after which requests are held
    closes = time.monotonic() + 60
    counts._remember({"throttle_user_raced": (9, closes)})
    counts._remember({"throttle_user_raced": (7, closes)})

    assert counts.count("throttle_user_raced", 60, 50)[0] == 10
