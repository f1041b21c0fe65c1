"""The timestamp a gpodder sync answers, which the app sends back as its next `since`."""

import math
from datetime import datetime, timedelta

from core import clock

# How far apart the clocks of the machines that stamp changes may be (NTP keeps them within
# milliseconds): a change stamped by a machine that is behind is still found.
CLOCK_SKEW = timedelta(seconds=1)


def sync_timestamp(latest_change: datetime | None, *, now: datetime | None = None) -> int:
    """Whole seconds T such that an app sending back T (AntennaPod, gPodder) or T + 1 (Kasts) as
    its next `since` ("changed at or after") misses no change made after this answer.

    Called while the user's writes are held (subscriptions.locks.hold_user_writes), with the
    user's latest change: every later change is stamped after it, and no earlier than its
    machine's clock. So T + 1 is the whole second of the later of the two, less the skew the
    clocks may have: changes of the last second or two come again, which is harmless; none is
    missed, not one made in the same second, nor one committed while the answer was read.

    `now`: the clock read before the user's writes were held, for a read that does not keep
    them held until it answers (no transaction kept open): every change not yet committed then
    is stamped after it.
    """
    floor = (clock.now() if now is None else now) - CLOCK_SKEW
    base = floor if latest_change is None else max(latest_change, floor)
    return math.floor(base.timestamp()) - 1


def settled_timestamp(
    latest_change: datetime | None, *, now: datetime | None = None, kept: int | None = None
) -> int:
    """sync_timestamp, or once the latest change is older than that, the second after it: every
    later change is stamped at or after it + 1 still, and the answer stays the same until the
    next change, so a device's read point (gpodder.services.subscription_pull,
    nextcloud.services.actions_download) is written only when something changed. While nothing
    was ever changed, the one answered before (`kept`) stays: every change comes after it.

    Not for an episode download's answer: Kasts downloads again while the timestamp it is
    answered is more than 10 s behind its clock.
    """
    moving = sync_timestamp(latest_change, now=now)
    if latest_change is None:
        return moving if kept is None else min(moving, kept)
    return min(moving, math.floor(latest_change.timestamp()) + 1)
