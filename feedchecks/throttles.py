"""How often a person may ask for a feed check now (docs/web.md, "When a feed can't be fetched"):
each such check fetches a server that is not ours, whenever it was fetched last, so one feed once
a minute per account, and THROTTLE_FEED_CHECK_RATE checks per account; counted like every other
throttle (api.throttles), in Redis when there is one."""

import math

from rest_framework.exceptions import Throttled

from api.throttles import LimitNamingThrottle, count_request

# A feed is fetched at a person's asking at most once in this many seconds, whoever asks
# (feedchecks.services.feed_check_run), and each account is told so when it asks again sooner.
CHECK_NOW_EVERY = 60

_PERIODS = {1: "a second", 60: "a minute", 3600: "an hour", 86400: "a day"}


class FeedCheckThrottle(LimitNamingThrottle):
    """Checks asked for per account (THROTTLE_FEED_CHECK_RATE)."""

    scope = "feed_check"
    limit_name = "checks asked for per account"

    def key_of(self, ident: str) -> str:
        return self.cache_format % {"scope": self.scope, "ident": ident}

    def limit_in_words(self) -> str:
        per = _PERIODS.get(self.duration, f"in {self.duration} seconds")
        checks = "check" if self.num_requests == 1 else "checks"
        return f"at most {self.num_requests} {checks} {per}"


def count_check_asked(*, user_id: int, key_digest: str) -> None:
    """Count a check of the feed `key_digest` asked for by the account `user_id`; raise Throttled,
    naming the limit, when it asked for this feed less than CHECK_NOW_EVERY seconds ago or has
    used up its checks."""
    throttle = FeedCheckThrottle()
    count, left = count_request(throttle.key_of(f"{user_id}:{key_digest}"), CHECK_NOW_EVERY)
    if count > 1:
        raise checked_lately(wait=left)
    if throttle.rate is None:
        return
    count, left = count_request(throttle.key_of(str(user_id)), throttle.duration)
    if count > throttle.num_requests:
        raise _Refused(f"You can ask for {throttle.limit_in_words()}.", left)


def checked_lately(*, wait: float) -> Throttled:
    """The refusal of a check of a feed fetched less than CHECK_NOW_EVERY seconds ago."""
    return _Refused(
        "This feed was checked less than a minute ago: each feed can be checked once a minute.",
        wait,
    )


class _Refused(Throttled):
    """Throttled saying `detail` alone: its `wait` is told apart (the page's "Try again in
    ..."), not added to the words as DRF's own would."""

    def __init__(self, detail: str, wait: float):
        super().__init__(detail=detail)
        self.wait = max(1, math.ceil(wait))
