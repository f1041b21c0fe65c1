"""Request throttles whose 429 names the limit that was hit (product.md section 11).

Each counts a client's requests with one atomic increment, in a window of the rate's period
that opens at the client's first request: in Redis when there is one (so every web process
shares the count) and in the cache otherwise. Windows aligned to the clock instead would let a
client send twice the rate across a boundary. DRF's own throttles keep the time of every request
in the window (1,200 at the default rate) and read and write that whole list on each request.
"""

import hashlib
import logging
import time
from functools import cache
from typing import Any

import redis
from django.conf import settings
from django.core.cache import cache as django_cache
from django.core.cache.backends.base import BaseCache
from django.core.cache.backends.locmem import LocMemCache
from rest_framework import throttling
from rest_framework.exceptions import Throttled

logger = logging.getLogger(__name__)

# A script runs atomically: were the key to expire between INCR and PEXPIRE, a counter that
# never expires could be left. One command, one reply: a MULTI/EXEC of the same took twice the
# time to send and read back.
_COUNT = """
local count = redis.call('INCR', KEYS[1])
local left = redis.call('PTTL', KEYS[1])
if left < 0 then
    redis.call('PEXPIRE', KEYS[1], ARGV[1])
    left = tonumber(ARGV[1])
end
return {count, left}
"""


@cache
def _counter() -> Any:
    # One client per process, made on first use: after gunicorn's fork, never before it. One
    # connection, which the client locks per command, spares the pool's bookkeeping on every
    # request; short timeouts keep an unreachable Redis from holding requests.
    client = redis.Redis.from_url(
        settings.REDIS_CACHE_URL,
        single_connection_client=True,
        socket_connect_timeout=1,
        socket_timeout=1,
    )
    return client.register_script(_COUNT)


# While Redis is away (`_away_until`, a monotonic time), each process counts on its own: a client
# may then send the rate once per process, but is still throttled, login attempts included.
_REDIS_RETRY_AFTER = 5.0
_away_until = 0.0
_local_counts = LocMemCache(
    "throttle-counts-while-redis-is-away", {"OPTIONS": {"MAX_ENTRIES": 10_000}}
)


def count_request(key: str, seconds: int) -> tuple[int, float]:
    """Count one request in `key`'s window of `seconds`, opening one if none is open.

    Returns the window's count so far and the seconds left until it closes.
    """
    global _away_until
    if not settings.REDIS_CACHE_URL:
        return _count_in(django_cache, key, seconds)
    if time.monotonic() < _away_until:
        return _count_in(_local_counts, key, seconds)
    try:
        count, left_ms = _counter()(keys=[key], args=[seconds * 1000])
    except redis.RedisError as exc:
        # Asked again only after a while: a Redis that does not answer would otherwise hold
        # every request for the client's timeout, one after the other.
        _away_until = time.monotonic() + _REDIS_RETRY_AFTER
        logger.warning(
            "Redis did not answer (%s): each web process counts requests on its own for %.0f s",
            exc,
            _REDIS_RETRY_AFTER,
        )
        return _count_in(_local_counts, key, seconds)
    return int(count), max(int(left_ms), 0) / 1000


def _count_in(store: BaseCache, key: str, seconds: int) -> tuple[int, float]:
    now = time.time()
    store.add(f"{key}:opened", now, seconds)
    store.add(key, 0, seconds)
    opened = store.get(f"{key}:opened", now)
    try:
        count = store.incr(key)
    except ValueError:  # the window closed between the two calls: this request opens the next
        store.set(key, count := 1, seconds)
    return int(count), max(opened + seconds - now, 0.0)


class LimitNamingThrottle(throttling.SimpleRateThrottle):
    limit_name = "requests"
    num_requests: int  # both set from the rate by SimpleRateThrottle
    duration: int

    def allow_request(self, request: Any, view: Any) -> bool:
        if self.rate is None:
            return True
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        count, self.retry_after = count_request(self.key, self.duration)
        if count > self.num_requests:
            return self.throttle_failure()
        return True

    def wait(self) -> float:
        return self.retry_after

    def throttle_failure(self) -> bool:
        raise Throttled(
            wait=self.wait(),
            detail=f"Rate limit exceeded: at most {self.rate} {self.limit_name}.",
        )


class UserThrottle(LimitNamingThrottle, throttling.UserRateThrottle):
    """Per user when authenticated, per client address otherwise."""

    limit_name = "requests per user"


class LoginThrottle(LimitNamingThrottle):
    """Login attempts per client address and username."""

    scope = "login"
    limit_name = "login attempts per address and username"

    def get_cache_key(self, request: Any, view: Any) -> str:
        username = request.data.get("username") if isinstance(request.data, dict) else None
        # Hashed: the name is read before validation, so it may be of any size or content.
        name = username.casefold() if isinstance(username, str) else ""
        digest = hashlib.sha256(name.encode("utf-8", "replace")).hexdigest()
        return self.cache_format % {
            "scope": self.scope,
            "ident": f"{self.get_ident(request)}:{digest}",
        }
