"""Changed accounts announced to every web process through Redis pub/sub, so that each drops
them at once from its cache of active users (accounts.active.active_users).

That cache spares a database round trip on each /v1/ request, and it is only as good as the
announcements a process hears: a process trusts it only while its subscriber is connected and
subscribed, and empties it each time it subscribes again (what was said in between is lost).
Without Redis (the embedded default: one process) there is nobody to tell.

Pub/sub channels belong to the Redis server, not to one of its numbered databases: processes
given REDIS_URL or REDIS_CACHE_URL of the same server hear each other whatever the database.
"""

import json
import logging
import os
import select
import ssl
import threading
import time
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

from django.conf import settings

if TYPE_CHECKING:
    import redis

logger = logging.getLogger(__name__)

CHANNEL = "accounts.changed_users"
# A Redis that does not answer holds neither a request (publish) nor the subscriber for long.
_TIMEOUT = 1.0
# The subscriber pings Redis when it has heard nothing for _PING_EVERY, and takes the connection
# for dead after _SILENT_AFTER without a word: one cut off without a FIN (a host unplugged, a
# firewall) would otherwise be trusted, and its announcements missed, for ever.
_PING_EVERY = 1.0
_SILENT_AFTER = 3.0
# Connecting again after a failure: at once-ish, then less and less often.
_RETRY_FIRST, _RETRY_MAX = 0.1, 5.0


def enabled() -> bool:
    """Whether there is a Redis to announce changes on."""
    return bool(settings.REDIS_CACHE_URL)


@cache
def _publisher(url: str) -> "redis.Redis":
    # Loaded here, with Redis only: redis-py is 21 MB of a process (core.lazyredis).
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    # Made on first use, after gunicorn's fork. One retry at once, on a new connection: the
    # pooled one may have died with a Redis restart, and a lost announcement is a stale cache.
    return redis.Redis.from_url(
        url, socket_connect_timeout=_TIMEOUT, socket_timeout=_TIMEOUT, retry=Retry(NoBackoff(), 1)
    )


def publish(user_ids: list[Any]) -> None:
    """Tell every process that these users changed. Never raises: the change is made already,
    and a request must not fail for want of Redis (whose subscribers, if they lost it too,
    trust no cache until they have it back)."""
    if not enabled():
        return
    import redis

    try:
        client = _publisher(settings.REDIS_CACHE_URL)
        client.publish(CHANNEL, json.dumps(user_ids, default=str))
        # Redis may write its answer to the publisher before the announcement to the
        # subscribers, all in one turn of its loop. A second round trip returns once that turn
        # is over: the announcement is on its way to every process before the request that
        # made the change answers.
        client.ping()
    except redis.RedisError as exc:
        logger.warning(
            "Could not announce changed users %s on Redis (%s): web processes still connected "
            "to it may take their old access tokens for up to AUTH_USER_CACHE_SECONDS",
            user_ids,
            exc,
        )


class Subscriber:
    """This process's listener to the announcements: `forget` gets the user ids of each, and
    `clear` is called on each (re)subscription, before `listening` turns true.

    Started by the first `listening()` of the process, so after gunicorn's fork (a thread does
    not survive a fork: the child starts its own)."""

    def __init__(self, forget: Callable[[list[Any]], None], clear: Callable[[], None]) -> None:
        self._forget, self._clear = forget, clear
        self._reset()
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        # Also in a forked child: the parent's thread, connection and lock are not its own.
        self._lock = threading.Lock()
        self._listener: _Listener | None = None

    def listening(self) -> bool:
        """Whether this process hears every announcement now, every one that has reached it
        applied. The first call starts the listener and waits for its first try (a moment), so
        that a new process's cache serves at once."""
        listener = self._listener
        if listener is None:
            with self._lock:
                starting = self._listener is None
                if starting:
                    self._listener = _Listener(settings.REDIS_CACHE_URL, self._forget, self._clear)
                    self._listener.start()
                listener = self._listener
            assert listener is not None
            if starting:
                listener.tried.wait(_TIMEOUT * 2)  # a connection and a subscription
        return listener.caught_up()

    def stop(self) -> None:
        """Stop listening; the next `listening()` starts afresh (tests, which change Redis)."""
        with self._lock:
            if self._listener is not None:
                self._listener.stopping.set()
                self._listener = None


def _readable(sock: Any, seconds: float) -> bool:
    """Whether the socket has something to read (or was closed), waiting up to `seconds`."""
    if isinstance(sock, ssl.SSLSocket) and sock.pending():  # rediss://: read, not yet taken
        return True
    poller = select.poll()  # one per call: a poll object refuses two threads at once
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(seconds * 1000))


class _Listener(threading.Thread):
    """The daemon thread: subscribes, reads the announcements, pings a quiet Redis, and
    connects again (backing off) when it loses it.

    The connection is read under `_reading`, by this thread or by a request: a request finding
    an announcement arrived but not yet read (this thread not yet scheduled, on a busy host)
    reads it itself before it trusts the cache, so that no request goes ahead of a change that
    reached the process before it. Finding none costs a poll of the socket, not a round trip."""

    def __init__(
        self, url: str, forget: Callable[[list[Any]], None], clear: Callable[[], None]
    ) -> None:
        super().__init__(name="accounts.invalidation", daemon=True)
        self._url, self._forget, self._clear = url, forget, clear
        self.stopping = threading.Event()
        self.tried = threading.Event()  # subscribed, or failed, once
        self._subscribed = threading.Event()
        self._reading = threading.Lock()
        self._pubsub: Any = None  # the current connection's, read under _reading
        self._heard = 0.0  # when Redis last said something (monotonic)
        self._confirmed = False  # the current connection's subscription

    def caught_up(self) -> bool:
        if not self._subscribed.is_set():
            return False
        try:
            # redis-py's socket (a private attribute; without it, read every time).
            sock = getattr(self._pubsub.connection, "_sock", None)
            if self._reading.locked() or sock is None or _readable(sock, 0):
                with self._reading:
                    self._read()
        except Exception:
            self._subscribed.clear()  # the thread finds out what happened, and connects again
        return self._subscribed.is_set()

    def run(self) -> None:
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        failures, logged = 0, False
        while not self.stopping.is_set():
            # No retry of redis-py's own: it would connect and subscribe again behind our back,
            # the cache trusted across the gap.
            client = redis.Redis.from_url(
                self._url,
                socket_connect_timeout=_TIMEOUT,
                socket_timeout=_TIMEOUT,
                retry=Retry(NoBackoff(), 0),
            )
            pubsub = client.pubsub()
            self._confirmed = False
            try:
                with self._reading:
                    self._heard = time.monotonic()
                    pubsub.subscribe(CHANNEL)  # confirmed by a message, read like the others
                    self._pubsub = pubsub
                while not self.stopping.is_set():
                    _readable(pubsub.connection._sock, _PING_EVERY)
                    with self._reading:
                        self._read()
                        silent = time.monotonic() - self._heard
                        if silent >= _SILENT_AFTER:
                            raise redis.ConnectionError(f"no answer for {_SILENT_AFTER:.0f} s")
                        if silent >= _PING_EVERY:
                            pubsub.ping()  # answered by a message: heard
            except Exception as exc:  # Redis lost, or anything else: the thread lives on
                self._subscribed.clear()
                if self._confirmed:  # it was working: a new outage, tried again soon
                    failures, logged = 0, False
                if not logged:
                    logger.warning(
                        "Not subscribed to changed users on Redis (%s): this process reads the "
                        "user of each token from the database until it is again",
                        exc,
                    )
                    logged = True
                failures += 1
            finally:
                self._subscribed.clear()
                self.tried.set()
                with self._reading:
                    self._pubsub = None
                pubsub.close()
                client.close()
            self.stopping.wait(min(_RETRY_FIRST * 2 ** max(failures - 1, 0), _RETRY_MAX))

    def _read(self) -> None:
        """Every message that has arrived (under _reading)."""
        while (message := self._pubsub.get_message(timeout=0)) is not None:
            self._heard = time.monotonic()
            if message["type"] == "subscribe":
                # Whatever was announced before went unheard: start afresh, then trust.
                self._clear()
                self._confirmed = True
                self._subscribed.set()
                self.tried.set()
            elif message["type"] == "message":
                self._announced(message["data"])

    def _announced(self, data: bytes) -> None:
        try:
            user_ids = json.loads(data)
            if not isinstance(user_ids, list):
                raise ValueError("not a list")
            self._forget(user_ids)
        except Exception:
            logger.warning("Unreadable announcement of changed users: %r", data)
            self._clear()  # forgetting everyone is always safe
