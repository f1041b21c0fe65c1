"""Request throttles whose 429 names the limit that was hit (docs/api.md, "Limits").

Each counts a client's requests in a window of the rate's period that opens at the client's
first request: in Redis when there is one (so every web process shares the count) and in the
cache otherwise. Windows aligned to the clock instead would let a client send twice the rate
across a boundary. DRF's own throttles keep the time of every request in the window (1,200 at
the default rate) and read and write that whole list on each request.
"""

import logging
import math
import threading
import time
from dataclasses import dataclass
from functools import cache
from typing import Any

from cachetools import TLRUCache
from django.conf import settings
from django.core.cache import cache as django_cache
from django.core.cache.backends.base import BaseCache
from django.core.cache.backends.locmem import LocMemCache
from rest_framework import throttling
from rest_framework.exceptions import Throttled

from core import lazyredis

logger = logging.getLogger(__name__)

# Adds to any number of windows' counts at once (KEYS, with ARGV holding each one's requests and
# the ms its window has left), giving one that has no expiry those ms, and answers each count
# and the ms it has left. A script runs atomically: were a key to expire between INCRBY and
# PEXPIRE, a counter that never expires could be left.
_COUNT = """
local replies = {}
for i, key in ipairs(KEYS) do
    local count = redis.call('INCRBY', key, ARGV[2 * i - 1])
    local left = redis.call('PTTL', key)
    if left < 0 then
        left = tonumber(ARGV[2 * i])
        redis.call('PEXPIRE', key, left)
    end
    replies[2 * i - 1] = count
    replies[2 * i] = left
end
return replies
"""


@cache
def _script() -> Any:
    # One client per process, made on first use: after gunicorn's fork, never before it. One
    # connection, which the client locks per command, spares the pool's bookkeeping; short
    # timeouts keep an unreachable Redis from holding requests.
    import redis

    client = redis.Redis.from_url(
        settings.REDIS_CACHE_URL,
        single_connection_client=True,
        socket_connect_timeout=1,
        socket_timeout=1,
    )
    return client.register_script(_COUNT)


@dataclass
class _Held:
    """Requests a process counted in a window and has not yet added to Redis."""

    requests: int
    closes: float  # when the window closes (monotonic), as far as the process knows


class SharedCounts:
    """A web process's share of the counts in Redis.

    A round trip to Redis on every request is a large share of a GET's CPU time under load
    (bench/README.md, "api.throttles.SharedCounts"), so a request is counted in the process alone
    while the process's estimate of its window (the count Redis last answered, plus the requests
    counted here since) stays at most `local_until` and the process last sent its counts less than
    THROTTLE_SYNC_SECONDS ago. Any other request sends every count the process holds, its own
    included, in one round trip, and is decided on the count Redis answers. So a refusal always
    rests on the shared count; what a process holds unsent is what it counted within one interval
    after a round trip, at most `local_until` per window. Held requests whose window has closed
    since are dropped, not charged to the next.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()  # gunicorn's gthread workers share the counts
        # Per window: the count Redis answered, and when (monotonic) the window closes.
        self._answered: TLRUCache[str, tuple[int, float]] = TLRUCache(
            maxsize=100_000, ttu=lambda _key, answer, _now: answer[1], timer=time.monotonic
        )
        self._unsent: dict[str, _Held] = {}
        self._sent_at = -math.inf

    def count(self, key: str, seconds: int, local_until: int) -> tuple[int, float]:
        """Counts one request in `key`'s window; returns the count and the seconds left."""
        now = time.monotonic()
        with self._lock:
            count, closes = self._answered.get(key, (0, now + seconds))
            held = self._unsent.get(key)
            if held is not None and held.closes <= now:
                del self._unsent[key]
                held = None
            count += 1 + (held.requests if held else 0)
            if count <= local_until and now - self._sent_at < settings.THROTTLE_SYNC_SECONDS:
                if held:
                    held.requests += 1
                else:
                    self._unsent[key] = _Held(1, closes)
                return count, closes - now
            sending, self._unsent = self._unsent, {}
            self._sent_at = now
        batch = {other: held for other, held in sending.items() if held.closes > now}
        mine = batch.get(key)
        batch[key] = _Held(1 + (mine.requests if mine else 0), closes)
        try:
            replies = _script()(
                keys=list(batch),
                args=[
                    n
                    for held in batch.values()
                    for n in (held.requests, max(math.ceil((held.closes - now) * 1000), 1))
                ],
            )
        except lazyredis.error():
            self._hold_again(sending)  # to be sent with the next round trip
            raise
        now = time.monotonic()
        answers = {
            sent: (int(count), now + max(int(left_ms), 0) / 1000)
            for sent, count, left_ms in zip(batch, replies[::2], replies[1::2], strict=True)
        }
        self._remember(answers)
        count, closes = answers[key]
        # Redis answers whole milliseconds: (now + left) - now is off by a rounding otherwise.
        return count, round(closes - now, 3)

    def _hold_again(self, unsent: dict[str, _Held]) -> None:
        with self._lock:
            for key, held in unsent.items():
                self._unsent.setdefault(key, _Held(0, held.closes)).requests += held.requests

    def _remember(self, answers: dict[str, tuple[int, float]]) -> None:
        with self._lock:
            for key, answer in answers.items():
                # Two threads' round trips may come back in either order: the higher count is
                # the later one (an older window's is forgotten when it closes).
                known = self._answered.get(key)
                if known is None or known[0] < answer[0]:
                    self._answered[key] = answer


_shared = SharedCounts()

# While Redis is away (`_away_until`, a monotonic time), each process counts on its own: a client
# may then send the rate once per process, but is still throttled, login attempts included.
_REDIS_RETRY_AFTER = 5.0
_away_until = 0.0
_local_counts = LocMemCache(
    "throttle-counts-while-redis-is-away", {"OPTIONS": {"MAX_ENTRIES": 10_000}}
)


def forget() -> None:
    """Makes this process start afresh, as a new web process would: its Redis client, the counts
    it holds, and whether Redis was away (tests)."""
    global _shared, _away_until
    _script.cache_clear()
    _shared = SharedCounts()
    _away_until = 0.0
    _local_counts.clear()


def count_request(key: str, seconds: int, local_until: int = 0) -> tuple[int, float]:
    """Count one request in `key`'s window of `seconds`, opening one if none is open.

    With Redis, a request may be counted in the process while the count is at most
    `local_until` (SharedCounts); 0 sends every request to Redis. Returns the window's count so
    far and the seconds left until it closes.
    """
    global _away_until
    if not settings.REDIS_CACHE_URL:
        return _count_in(django_cache, key, seconds)
    if time.monotonic() < _away_until:
        return _count_in(_local_counts, key, seconds)
    try:
        return _shared.count(key, seconds, local_until)
    except lazyredis.error() as exc:
        # Asked again only after a while: a Redis that does not answer would otherwise hold
        # every request for the client's timeout, one after the other.
        _away_until = time.monotonic() + _REDIS_RETRY_AFTER
        logger.warning(
            "Redis did not answer (%s): each web process counts requests on its own for %.0f s",
            exc,
            _REDIS_RETRY_AFTER,
        )
        return _count_in(_local_counts, key, seconds)


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


# The request's attributes naming the scopes that counted it and let it through already, and
# the refusal of the one that counted it and refused it (the fast path's, before it passed the
# request on to its view: fastpath), so no scope counts it twice.
PASSED = "_throttles_passed"
REFUSED = "_throttle_refused"


def throttles_pass(request: Any, throttles: list[Any]) -> bool:
    """Whether each of `throttles` (throttle classes) lets the request through, each counting it
    once, with its scope marked on the request; Throttled (429) from the first that does not,
    kept on the request for its view to answer."""
    passed: set[str] = getattr(request, PASSED, set())
    for throttle_class in throttles:
        throttle = throttle_class()
        try:
            allowed = throttle.allow_request(request, None)
        except Throttled as refusal:
            setattr(request, REFUSED, (throttle.scope, refusal))
            raise
        if not allowed:
            return False
        passed.add(throttle.scope)
    setattr(request, PASSED, passed)
    return True


class LimitNamingThrottle(throttling.SimpleRateThrottle):
    limit_name = "requests"
    # Up to this share of the rate, a web process may count a client's requests on its own for a
    # moment before adding them to the shared count (SharedCounts).
    counted_in_process = 0.0
    num_requests: int  # both set from the rate by SimpleRateThrottle
    duration: int

    def allow_request(self, request: Any, view: Any) -> bool:
        if self.rate is None or self.scope in getattr(request, PASSED, ()):
            return True
        refused = getattr(request, REFUSED, None)
        if refused is not None and refused[0] == self.scope:
            raise refused[1]
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        count, self.retry_after = count_request(
            self.key, self.duration, int(self.num_requests * self.counted_in_process)
        )
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
    counted_in_process = 0.5
