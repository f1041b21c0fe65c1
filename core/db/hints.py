"""Writes that note where a reader stands (a device's last pull or use), made on read paths.

Losing one in a crash costs nothing but a change answered twice, so they commit without waiting
for the write-ahead log to reach the disk: a read never waits for a disk flush
(bench/README.md, "core.db.hints").
"""

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection, transaction


@contextmanager
def unflushed() -> Iterator[None]:
    """A transaction whose commit does not wait for the disk (PostgreSQL's synchronous_commit
    off for it alone; SQLite's commits are the embedded default's own). Inside another
    transaction, that one's commit decides: its other writes may not be lost."""
    if connection.in_atomic_block:
        yield
        return
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL synchronous_commit TO OFF")
        yield
