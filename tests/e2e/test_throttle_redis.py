"""The request throttle on a real Redis, as production runs it: one count for every process."""

import logging
import socket
import time

import pytest
import redis

from config.api import throttles
from config.api.throttles import UserThrottle

ADD = "/v1/subscriptions"
BODY = {"subscriptions": [{"feed_url": "https://podnews.net/rss"}]}


@pytest.fixture
def redis_cache(redis_server, settings):
    if redis_server.process is None:
        redis_server.start()
    settings.REDIS_CACHE_URL = redis_server.url
    throttles._counter.cache_clear()
    client = redis.Redis.from_url(redis_server.url)
    client.flushdb()
    yield client
    throttles._counter.cache_clear()


def test_the_user_rate_is_counted_in_redis_and_answers_429_naming_it(
    api, other_api, redis_cache, monkeypatch
):
    monkeypatch.setattr(UserThrottle, "THROTTLE_RATES", {"user": "3/min", "login": "10/min"})
    for _ in range(2):
        assert api.post(ADD, BODY, format="json").status_code == 200
    throttles._counter.cache_clear()  # another web process: a client of its own, the same count
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
    assert 59_000 < redis_cache.pttl("throttle_user_1") <= 60_000


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
    monkeypatch.setattr(throttles, "_away_until", 0.0)
    throttles._counter.cache_clear()
    yield
    throttles._counter.cache_clear()
    silent.close()


def test_while_redis_does_not_answer_each_process_counts_on_its_own(
    api, redis_away, monkeypatch, caplog
):
    """Not a sync refused, nor requests held one after the other; still throttled, and logged
    once."""
    monkeypatch.setattr(UserThrottle, "THROTTLE_RATES", {"user": "4/min", "login": "10/min"})
    with caplog.at_level(logging.WARNING, logger="config.api.throttles"):
        started = time.monotonic()
        statuses = [api.get(ADD).status_code for _ in range(5)]
        elapsed = time.monotonic() - started

    assert statuses == [200, 200, 200, 200, 429]
    assert elapsed < 3  # one wait for Redis's timeout (1 s), not five
    warnings = [r for r in caplog.records if "Redis did not answer" in r.getMessage()]
    assert len(warnings) == 1
