"""The request throttle on a real Redis, as production runs it: one count for every process."""

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
    throttles._redis.cache_clear()
    client = redis.Redis.from_url(redis_server.url)
    client.flushdb()
    yield client
    throttles._redis.cache_clear()


def test_the_user_rate_is_counted_in_redis_and_answers_429_naming_it(
    api, other_api, redis_cache, monkeypatch
):
    monkeypatch.setattr(UserThrottle, "THROTTLE_RATES", {"user": "3/min", "login": "10/min"})
    for _ in range(2):
        assert api.post(ADD, BODY, format="json").status_code == 200
    throttles._redis.cache_clear()  # another web process: a client of its own, the same count
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
