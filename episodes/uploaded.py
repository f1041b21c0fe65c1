"""What an app uploaded lately, so that its next download leaves it out (docs/gpodder-api.md,
"Episode actions: an app's own uploads").

An app's next `since` is never later than its last download's timestamp (the window an upload
closes, episodes.views), so each download brought back the app's own uploads since then: in an
app that syncs back to back, nine in ten of the actions it downloaded. The upload's answer sets
a cookie with the ids of the rows it added, grouped by the whole second they were received in;
the next download leaves those rows out. A row the cookie names holds exactly what that app
sent, so leaving it out can never keep from it anything it lacks; whatever the cookie does not
name (an app that keeps no cookies, ids past the limit, a cookie that does not verify) comes
again, as before.
"""

from collections.abc import Iterable
from itertools import accumulate
from operator import sub

# The cookie, on the episode paths alone, signed for the account (episodes.views).
COOKIE = "episodes_uploaded"

# The most ids it holds, the latest kept: about 2 characters each (deltas), so the cookie stays
# well under the 4,096 bytes a cookie may have.
MOST = 600

Kept = dict[int, list[int]]  # whole second received: the ids of the rows added in it, ascending


def parsed(value: str) -> Kept:
    """The cookie's groups, `second-first.delta.delta_second-...` (characters a cookie's value
    may hold unquoted); {} for anything else."""
    kept: Kept = {}
    try:
        for group in value.split("_") if value else ():
            second, _, ids = group.partition("-")
            kept[int(second)] = list(accumulate(map(int, ids.split("."))))
    except ValueError:
        return {}
    return kept


def written(kept: Kept) -> str:
    return "_".join(
        f"{second}-{'.'.join(map(str, map(sub, ids, [0, *ids[:-1]])))}"
        for second, ids in sorted(kept.items())
    )


def kept_after(
    kept: Kept, *, answered: int, second: int | None = None, added: Iterable[int] = ()
) -> Kept:
    """`kept` with the rows an upload `added` in `second`, less every group received before
    `answered`: the app's next `since` is never earlier than the timestamp it was just answered,
    so those rows cannot come again. At most MOST ids, the latest."""
    if second is not None:
        kept = {**kept, second: sorted({*kept.get(second, ()), *added})}
    found, room = {}, MOST
    for at in sorted((at for at in kept if at >= answered), reverse=True):
        ids = kept[at][-room:] if room else []
        if ids:
            found[at] = ids
            room -= len(ids)
    return found


def ids_of(kept: Kept) -> frozenset[int]:
    return frozenset(id_ for ids in kept.values() for id_ in ids)
