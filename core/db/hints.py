"""Writes that note where a reader stands (a device's last pull or use, a sync request's note),
made on read paths.

Losing one in a crash costs nothing but a change answered twice, so they commit without waiting
for the write-ahead log to reach the disk: a read never waits for a disk flush
(bench/README.md, "core.db.hints").
"""

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection, transaction


@contextmanager
def unflushed(*, first: bool = False) -> Iterator[None]:
    """A transaction whose commit does not wait for the disk: PostgreSQL's synchronous_commit off
    for it alone; SQLite's synchronous NORMAL for it alone, a WAL commit then waiting for no
    fsync (the next commit at FULL flushes it with its own). Inside another transaction, that
    one's commit decides: its other writes may not be lost.

    `first`: the device's first read point, which waits all the same. A later one lost in a
    crash leaves the one before it, earlier, and what lies between comes again; the first would
    leave none, and the device's next sync would start from the app's own clock, past what other
    devices sent meanwhile."""
    if first or connection.in_atomic_block:
        yield
        return
    if connection.vendor == "sqlite":
        with _sqlite_normal(), transaction.atomic():
            yield
        return
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL synchronous_commit TO OFF")
        yield


@contextmanager
def _sqlite_normal() -> Iterator[None]:
    """SQLite's synchronous setting is the connection's, not a transaction's: NORMAL while the
    block runs, then what it was (FULL: config/settings/base.py). A connection that cannot be set
    back is closed, never left to commit the next write at NORMAL."""
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA synchronous")
        kept = int(cursor.fetchone()[0])
        cursor.execute("PRAGMA synchronous = NORMAL")
    try:
        yield
    finally:
        try:
            with connection.cursor() as cursor:
                cursor.execute(f"PRAGMA synchronous = {kept}")
        except Exception:
            connection.close()
            raise
