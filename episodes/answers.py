"""An episode download's answer, `{"actions": [...], "timestamp": T}`, on the gpodder API and
the Nextcloud paths alike: one body when it is small (an app's every sync), written a piece at a
time as it is read when it is not (a new phone's first sync of a long history), so a web
process's memory stays flat whatever its size."""

from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import Any

import orjson
from django.http import HttpResponse, StreamingHttpResponse

from episodes.actions import action_body

# Actions written in one piece of an answer.
PIECE = 1000


def actions_answer(
    rows: Iterable[Any],
    timestamp: int,
    *,
    with_device: bool = True,
    sent: Callable[[int], None] | None = None,
) -> HttpResponse | StreamingHttpResponse:
    """The answer of `rows` (read as it is written) and `timestamp`; `with_device`: each action
    names its device (the gpodder API), or not (the Nextcloud paths). `sent` is told how many
    actions it holds, once they are all read: after the last piece of a long one."""
    rows = iter(rows)
    first = list(islice(rows, PIECE))
    if len(first) < PIECE:
        actions = [action_body(row, with_device=with_device) for row in first]
        body = orjson.dumps({"actions": actions, "timestamp": timestamp})
        if sent is not None:
            sent(len(actions))
        return HttpResponse(body, content_type="application/json")
    pieces = _pieces(first, rows, timestamp, with_device, sent)
    return StreamingHttpResponse(pieces, content_type="application/json")


def _pieces(
    first: list[Any],
    rest: Iterator[Any],
    timestamp: int,
    with_device: bool,
    sent: Callable[[int], None] | None,
) -> Iterator[bytes]:
    yield b'{"actions":['
    piece, separator, count = first, b"", 0
    while piece:
        actions = [orjson.dumps(action_body(row, with_device=with_device)) for row in piece]
        count += len(actions)
        yield separator + b",".join(actions)
        piece, separator = list(islice(rest, PIECE)), b","
    if sent is not None:
        sent(count)
    yield b'],"timestamp":%d}' % timestamp
