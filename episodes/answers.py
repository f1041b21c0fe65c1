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


def texts_of(rows: Iterable[Any], *, with_device: bool = True) -> Iterator[str]:
    """The JSON texts of actions read in Python (an aggregated download's), as the database
    writes them (episodes.selectors.action_texts_since)."""
    for row in rows:
        yield orjson.dumps(action_body(row, with_device=with_device)).decode()


def actions_answer(
    texts: Iterable[str], timestamp: int, *, sent: Callable[[int], None] | None = None
) -> HttpResponse | StreamingHttpResponse:
    """The answer of the actions' JSON `texts` (read as it is written) and `timestamp`,
    byte for byte orjson's of the whole. `sent` is told how many actions it holds, once they
    are all read: after the last piece of a long one."""
    texts = iter(texts)
    first = list(islice(texts, PIECE))
    if len(first) < PIECE:
        body = b'{"actions":[%s],"timestamp":%d}' % (",".join(first).encode(), timestamp)
        if sent is not None:
            sent(len(first))
        return HttpResponse(body, content_type="application/json")
    pieces = _pieces(first, texts, timestamp, sent)
    return StreamingHttpResponse(pieces, content_type="application/json")


def _pieces(
    first: list[str],
    rest: Iterator[str],
    timestamp: int,
    sent: Callable[[int], None] | None,
) -> Iterator[bytes]:
    yield b'{"actions":['
    piece, separator, count = first, b"", 0
    while piece:
        count += len(piece)
        yield separator + ",".join(piece).encode()
        piece, separator = list(islice(rest, PIECE)), b","
    if sent is not None:
        sent(count)
    yield b'],"timestamp":%d}' % timestamp
