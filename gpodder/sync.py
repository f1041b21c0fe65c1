"""The timestamp a gpodder sync answers, which the app sends back as its next `since`."""

import math
from datetime import datetime, timedelta

from core import clock

# How far apart the clocks of the machines that stamp changes may be (NTP keeps them within
# milliseconds): a change stamped by a machine that is behind is still found.
CLOCK_SKEW = timedelta(seconds=1)


def sync_timestamp(latest_change: datetime | None) -> int:
    """Whole seconds T such that an app sending back T (AntennaPod, gPodder) or T + 1 (Kasts) as
    its next `since` ("changed at or after") misses no change made after this answer.

    Called while the user's writes are held (subscriptions.services.hold_user_writes), with the
    user's latest change: every later change is stamped after it, and no earlier than its
    machine's clock. So T + 1 is the whole second of the later of the two, less the skew the
    clocks may have: changes of the last second or two come again, which is harmless; none is
    missed, not one made in the same second, nor one committed while the answer was read.
    """
    floor = clock.now() - CLOCK_SKEW
    base = floor if latest_change is None else max(latest_change, floor)
    return math.floor(base.timestamp()) - 1
