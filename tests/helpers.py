"""Small helpers the tests share."""

import re
import time
from collections.abc import Callable
from typing import Any

from subscriptions import services

TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def subscribe(user: Any, feed_url: str, guid: str | None = None) -> Any:
    """Add one subscription through the service, as POST /v1/subscriptions would."""
    result = services.subscription_add_many(
        user=user, entries=[services.AddEntry(feed_url=feed_url, guid=guid)]
    )
    assert not result.failure, result.failure
    return result.success[0]


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll `condition` every 0.1 s; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.1)
