"""Writes made after the answer: a per-process writer thread for the notes of where a reader
stands (core.db.hints), so that a sync request answers without waiting for its note.

The writer takes the writes of every request of its process from one bounded queue, in the
order they came, and writes what has gathered in one transaction whose commit does not wait
for the disk. What it has not written yet is lost if the process dies: at most the queue's
bound, usually the last few milliseconds' notes (docs/sync.md, "What a crash can lose").

A write inside a transaction is made at once, in it: the transaction decides, as before. So is
a write when the queue is full: a burst slows its requests down and loses nothing.
"""

import atexit
import logging
import os
import queue
import threading
from collections.abc import Callable

from django.db import DatabaseError, close_old_connections, connection

from core.db.hints import unflushed

logger = logging.getLogger(__name__)

Write = Callable[[], None]

# The writes waiting at most, and written in one transaction at most.
BOUND = 10_000
BATCH = 200
# How long a process that ends waits for the writes it still holds.
EXIT_WAIT_SECONDS = 5.0


class Writer:
    """One process's writer thread, started by the first write (after gunicorn's fork)."""

    def __init__(self) -> None:
        self._queue: queue.Queue[Write] = queue.Queue(BOUND)
        self._lock = threading.Lock()
        self._pid: int | None = None

    def write(self, write: Write) -> None:
        """`write` after the answer; at once inside a transaction or when the queue is full. It
        must catch its own database errors outside a transaction, as it would at once."""
        if connection.in_atomic_block:
            write()
            return
        self._start()
        try:
            self._queue.put_nowait(write)
        except queue.Full:
            write()

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every write taken so far is written, or `timeout` seconds."""
        if self._pid != os.getpid():
            return  # no writer here: nothing held
        waiting = self._queue
        with waiting.all_tasks_done:
            waiting.all_tasks_done.wait_for(lambda: not waiting.unfinished_tasks, timeout)

    def _start(self) -> None:
        if self._pid == os.getpid():
            return
        with self._lock:
            if self._pid == os.getpid():
                return
            # A fork keeps the parent's queue but not its thread: start afresh.
            self._queue = queue.Queue(BOUND)
            threading.Thread(target=self._run, name="core.db.later", daemon=True).start()
            self._pid = os.getpid()

    def _run(self) -> None:
        while True:
            batch = [self._queue.get()]
            while len(batch) < BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            try:
                _written(batch)
            except Exception:
                logger.exception("writes after the answer were not made")
            finally:
                for _ in batch:
                    self._queue.task_done()
                # As at a request's end: CONN_MAX_AGE and a broken connection decide.
                close_old_connections()


def _written(batch: list[Write]) -> None:
    """The batch in one transaction; when the database refuses one of it, each on its own
    (a write outside a transaction logs its own failure)."""
    try:
        with unflushed():
            for write in batch:
                write()
    except DatabaseError:
        for write in batch:
            write()


WRITER = Writer()
write_later = WRITER.write
flush = WRITER.flush


def _at_exit() -> None:
    """A process that ends writes what it holds, for a moment at most (no thread may start
    now: the writer, a daemon, still runs until the interpreter ends)."""
    flush(EXIT_WAIT_SECONDS)


atexit.register(_at_exit)
