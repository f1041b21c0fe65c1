"""Request throttles whose 429 names the limit that was hit (product.md section 11).

Each counts requests in fixed windows of the rate's period with one atomic increment, in Redis
when there is one (so every web process shares the count) and in the cache otherwise. DRF's own
throttles keep the time of every request in the window (1,200 at the default rate) and read and
write that whole list on each request.
"""

import hashlib
from functools import cache
from typing import Any

import redis
from django.conf import settings
from django.core.cache import cache as django_cache
from rest_framework import throttling
from rest_framework.exceptions import Throttled


@cache
def _redis() -> redis.Redis:
    # One client per process, made on first use: after gunicorn's fork, never before it.
    return redis.Redis.from_url(settings.REDIS_CACHE_URL)


def count_request(key: str, seconds: int) -> int:
    """Count one request under `key`, which lives `seconds`; return the count so far."""
    if settings.REDIS_CACHE_URL:
        pipe = _redis().pipeline(transaction=False)
        pipe.set(key, 0, ex=seconds, nx=True)
        pipe.incr(key)
        _, count = pipe.execute()
        return int(count)
    django_cache.add(key, 0, seconds)
    return int(django_cache.incr(key))


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
        now = self.timer()
        window = int(now // self.duration)
        self.retry_after = (window + 1) * self.duration - now
        if count_request(f"{self.key}:{window}", self.duration) > self.num_requests:
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
