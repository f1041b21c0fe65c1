"""Reading a fetched feed in a child process that may spend at most MAX_CPU_SECONDS of CPU.

feedparser's cost follows a document's shape as much as its size: 5 MiB of unclosed tags took a
minute of CPU, and the attributes of one element cost it their number squared (bench/HISTORY.md,
"Feed parsing"). parsing.MAX_TAGS refuses the densest shapes at once; for every other, the
kernel stops the child when its CPU time is spent (RLIMIT_CPU), whatever feedparser is doing.
The child runs at a lower priority, so the pages and the API of a one-machine install come
first. It is a new interpreter, never a fork: the home server runs checks on threads of its web
process, and a forked copy of a threaded process can inherit a lock another thread held. It
answers in JSON, not pickle: it has just read a document anyone could have written.
"""

import dataclasses
import json
import math
import os
import resource
import signal
import subprocess
import sys
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

from feedchecks import parsing

# The CPU time one feed's reading may take. A real feed's cost grows with its items: 10,000 short
# ones (4.6 MB, within the fetch's 5 MiB cap) took 5 to 8 s on the development VM, so a smaller
# bound would refuse feeds that are read today (bench/HISTORY.md, "Feed parsing").
MAX_CPU_SECONDS = 10
# By the clock, for a child that a busy machine slows down (it runs niced): it is stopped then
# all the same.
MAX_SECONDS = 60
NICENESS = 10  # the web processes of a one-machine install come first

_ROOT = Path(__file__).resolve().parents[1]
_CHILD = "import sys; sys.path.insert(0, sys.argv[1]); from feedchecks.reader import child; child()"
_REFUSALS: dict[str, type[ValueError]] = {
    cls.__name__: cls
    for cls in (
        parsing.UnsafeFeed,
        parsing.UnreadableFeed,
        parsing.FeedTooComplex,
        parsing.NotAFeed,
    )
}


def read_feed(data: bytes, *, episodes_kept: int) -> parsing.FeedIdentity:
    """parsing.feed_identity(data, episodes_kept=...) in a child process held to MAX_CPU_SECONDS.

    Raises what feed_identity raises for the document (UnsafeFeed, UnreadableFeed,
    FeedTooComplex, NotAFeed), FeedTooComplex too when the child runs out of time, and
    RuntimeError when it fails in any other way (a bug: the message ends with what it wrote to
    stderr).
    """
    command = [sys.executable, "-c", _CHILD, str(_ROOT), str(MAX_CPU_SECONDS), str(episodes_kept)]
    try:
        done = subprocess.run(command, input=data, capture_output=True, timeout=MAX_SECONDS)
    except subprocess.TimeoutExpired:
        raise parsing.FeedTooComplex(
            f"The feed is too complex to read: still unread after {MAX_SECONDS} s"
        ) from None
    # SIGXCPU at the soft limit; SIGKILL at the hard one, or from the kernel short of memory.
    if done.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        raise parsing.FeedTooComplex(
            f"The feed is too complex to read: more than {MAX_CPU_SECONDS} s of CPU"
        )
    if done.returncode != 0:
        raise RuntimeError(
            f"The feed reader exited with {done.returncode}: "
            + done.stderr[-2000:].decode("utf-8", "replace")
        )
    answer = json.loads(done.stdout)
    if "refused" in answer:
        raise _REFUSALS[answer["refused"]](answer["message"])
    return _identity(answer["identity"])


def child() -> None:
    """The child's side: the document from stdin, the answer on stdout (read_feed)."""
    _, _, cpu_seconds, episodes_kept = sys.argv
    spent = resource.getrusage(resource.RUSAGE_SELF)
    # The interpreter's start counts: the limit is on the process's whole CPU time. SIGXCPU
    # stops it at the soft limit, SIGKILL a second later should anything catch that.
    limit = math.ceil(spent.ru_utime + spent.ru_stime + float(cpu_seconds))
    resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # SIGXCPU's default is to dump core
    os.nice(NICENESS)
    data = sys.stdin.buffer.read()
    answer: dict[str, Any]
    try:
        identity = parsing.feed_identity(data, episodes_kept=int(episodes_kept))
    except (parsing.UnsafeFeed, parsing.UnreadableFeed) as exc:
        answer = {"refused": type(exc).__name__, "message": str(exc)}
    else:
        # uuid.UUID and datetime as str, which _identity reads back.
        answer = {"identity": dataclasses.asdict(identity)}
    sys.stdout.write(json.dumps(answer, default=str))


def _identity(found: dict[str, Any]) -> parsing.FeedIdentity:
    return parsing.FeedIdentity(
        guid=uuid.UUID(found["guid"]) if found["guid"] else None,
        new_feed_url=found["new_feed_url"],
        title=found["title"],
        link=found["link"],
        image_url=found["image_url"],
        episodes=tuple(
            parsing.FeedItem(
                **{
                    **item,
                    "published": datetime.fromisoformat(item["published"])
                    if item["published"]
                    else None,
                }
            )
            for item in found["episodes"]
        ),
    )
