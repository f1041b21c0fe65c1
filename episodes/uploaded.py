"""What an app uploaded lately, so that its next download leaves it out (docs/gpodder-api.md,
"Episode actions: an app's own uploads").

An app's next `since` is never later than its last download's timestamp (the window an upload
closes, episodes.views), so each download brought back the app's own uploads since then: in an
app that syncs back to back, nine in ten of the actions it downloaded. The upload's answer sets
a cookie with the ids of the rows it added, grouped by the whole second they were received in;
the next download leaves out a row whose id and second the cookie names (an id alone could be
another row's after a restore from a backup set the ids back). A row the cookie names holds
exactly what that app sent, so leaving it out keeps from it nothing it lacks, with one exception
the download sees to: AntennaPod and Kasts settle an episode's position among the actions of one
download (and their own still unsent), so an app's own action on an episode that another app's
action in the same answer is also on is sent all the same, or another device's older play would
win over it. Whatever the cookie does not name (an app that keeps no cookies, ids past its
limits, a cookie that does not verify) comes again, as before; so does everything of an answer
too long for one body (a first sync).
"""

from collections.abc import Iterable, Iterator
from itertools import accumulate, chain, islice
from operator import sub

from episodes.selectors import ActionShown

# The cookie, on the episode paths alone, signed for the account (episodes.views).
COOKIE = "episodes_uploaded"

# The most ids it names, and the most characters its value takes, the latest kept: a cookie
# may have 4,096 bytes with its name and signature, and a server's request line and headers
# are limited too (gunicorn: 8,190 bytes a header).
MOST = 600
MOST_CHARACTERS = 3000

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
    return "_".join(_group(second, ids) for second, ids in sorted(kept.items()))


def _group(second: int, ids: list[int]) -> str:
    return f"{second}-{'.'.join(map(str, map(sub, ids, [0, *ids[:-1]])))}"


def kept_after(
    kept: Kept, *, answered: int, second: int | None = None, added: Iterable[int] = ()
) -> Kept:
    """`kept` with the rows an upload `added` in `second`, less every group received before
    `answered`: the app's next `since` is never earlier than the timestamp it was just answered,
    so those rows cannot come again. At most MOST ids and MOST_CHARACTERS characters, the
    latest first."""
    if second is not None:
        kept = {**kept, second: sorted({*kept.get(second, ()), *added})}
    found: Kept = {}
    count = length = 0
    for at in sorted((at for at in kept if at >= answered), reverse=True):
        ids = _latest_that_fit(at, kept[at][-(MOST - count) :], MOST_CHARACTERS - length)
        if not ids:
            break
        found[at] = ids
        count += len(ids)
        length += len(_group(at, ids)) + 1
    return found


def _latest_that_fit(second: int, ids: list[int], room: int) -> list[int]:
    """The longest tail of `ids` whose group's text takes at most `room` characters (the
    separator before it included): the first id is written whole, each next as its delta."""
    if not ids:
        return []
    fixed = len(str(second)) + 2  # the second, "-" and the "_" before the group
    deltas = 0  # the text of the deltas after position i
    start = len(ids)
    for i in range(len(ids) - 1, -1, -1):
        if fixed + len(str(ids[i])) + deltas > room:
            break
        start = i
        if i:
            deltas += len(str(ids[i] - ids[i - 1])) + 1
    return ids[start:]


def named(kept: Kept) -> frozenset[tuple[int, int]]:
    """The (second received, id) of each row the cookie names."""
    return frozenset((second, id_) for second, ids in kept.items() for id_ in ids)


def left_out(
    rows: Iterable[ActionShown], own: frozenset[tuple[int, int]], limit: int
) -> Iterator[ActionShown]:
    """`rows` less the app's `own` uploads, but for those on an episode another row is on too;
    all of them when they are `limit` or more (an answer written in pieces as it is read)."""
    rows = iter(rows)
    first = list(islice(rows, limit))
    if not own or len(first) >= limit:
        return chain(first, rows)

    def mine(row: ActionShown) -> bool:
        return (int(row.received.timestamp()), row.id) in own

    others = {(row.podcast_key, row.episode) for row in first if not mine(row)}
    return iter([row for row in first if not mine(row) or (row.podcast_key, row.episode) in others])
