"""Where a web worker's time goes under a real load: py-spy samples the workers of a gunicorn
master while it serves, counting only the threads that hold the GIL (what Python runs, not what
it waits for), and the samples are shared out by where they were taken."""

import contextlib
import re
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

# The service's own packages, as py-spy names their files (relative to the project).
_PROJECT = re.compile(
    r"\((?:accounts|api|config|core|deletions|episodes|feedchecks|gpodder|home|imports|nextcloud"
    r"|staff|subscriptions|web)/"
)
DRIVER = "the database driver (psycopg's Python)"
AUTHENTICATION = "authentication (the session and its user)"
VIEWS = "the views and what they call"
DRF = "DRF's dispatch"
DJANGO = "Django's handler and the middleware"
OUTSIDE = "gunicorn (its loop, parsing, writing) and the rest"


@contextlib.contextmanager
def gil_samples(master: int, output: Path) -> Iterator[None]:
    """py-spy on `master` and its workers for as long as the block runs."""
    spy = subprocess.Popen(
        [str(Path(sys.executable).parent / "py-spy"), "record", "--pid", str(master),
         "--subprocesses", "--gil", "--rate", "500", "--format", "raw", "--output", str(output),
         "--nonblocking"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        yield
    finally:
        spy.send_signal(signal.SIGINT)  # py-spy writes its samples out as it stops
        spy.wait(timeout=60)


def shares(raw: Path) -> dict[str, float]:
    """Each place's share of the samples in py-spy's raw output (a stack a line, its frames
    outermost first, then its count)."""
    counted: Counter[str] = Counter()
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if count.isdigit():
            counted[_place(stack)] += int(count)
    total = sum(counted.values()) or 1
    return {name: n / total for name, n in counted.most_common()}


def _place(stack: str) -> str:
    if "WSGIHandler.__call__" not in stack:
        return OUTSIDE
    if "psycopg/" in stack:
        return DRIVER
    if "perform_authentication" in stack:
        return AUTHENTICATION
    if "APIView.dispatch" in stack:
        return VIEWS if _PROJECT.search(stack.split("APIView.dispatch", 1)[1]) else DRF
    return DJANGO
