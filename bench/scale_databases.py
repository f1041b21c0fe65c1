"""`make scale`'s two databases (bench/scale.py): their shapes (SCALE), the server's tuning for
the large one, and each one created, migrated and loaded with bench/scale_data.py."""

import contextlib
import os
import time
from collections.abc import Iterator

from bench import scale_data as data
from tests import servers

SCALE = float(os.environ.get("SCALE", "1"))
BIG = data.Shape(accounts=int(1_000_000 * SCALE), feeds=max(100, int(100_000 * SCALE)))
SMALL = data.Shape(accounts=1_000, feeds=100)
# PostgreSQL for a data set larger than its default 128 MB of shared buffers; the same server
# holds both databases, so the comparison is of the data's size alone.
TUNING = {
    "shared_buffers": "2GB",
    "maintenance_work_mem": "1GB",
    "max_wal_size": "8GB",
    "checkpoint_timeout": "30min",
    "effective_cache_size": "8GB",
}


def tuned(pg: servers.Server) -> None:
    import psycopg

    with psycopg.connect(f"postgresql://postgres@{pg.host}:{pg.port}/postgres") as conn:
        conn.autocommit = True
        for name, value in TUNING.items():
            conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
    servers.postgres_stop(pg)
    servers.postgres_start(pg)


def dsn(pg: servers.Server, database: str) -> str:
    return f"postgresql://postgres@{pg.host}:{pg.port}/{database}"


@contextlib.contextmanager
def on_database(name: str) -> Iterator[None]:
    """This process's Django connection on database `name` for a while (the same server)."""
    from django.db import connection

    before = connection.settings_dict["NAME"]
    connection.close()
    connection.settings_dict["NAME"] = name
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict["NAME"] = before


def loaded(pg: servers.Server, database: str, shape: data.Shape) -> float:
    """Create, migrate and fill `database`; print what it took and holds; return the seconds."""
    import psycopg
    from django.core.management import call_command

    with psycopg.connect(dsn(pg, "postgres"), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {database}")
    with on_database(database):
        call_command("migrate", verbosity=0)
    rows = sum(shape.rows().values())
    print(f"\n{database}: {shape.accounts:,} accounts, {shape.feeds:,} feeds, {rows:,} rows")
    start = time.monotonic()
    tables = data.load(dsn(pg, database), shape)
    took = time.monotonic() - start
    print(f"{database}: loaded in {took:.0f} s")
    total = 0
    print(f"  {'table / index':<58} {'rows':>12} {'seconds':>8} {'MB':>9}")
    by_table = {t.table: t for t in tables}
    for table, index, size in data.sizes(dsn(pg, database)):
        total += size
        if not index:
            t = by_table[table]
            print(f"  {table:<58} {t.rows:>12,} {t.seconds:>8.0f} {size / 2**20:>9,.0f}")
        else:
            print(f"    {index:<56} {'':>12} {'':>8} {size / 2**20:>9,.0f}")
    print(f"  {'all loaded tables and their indexes':<58} {'':>12} {'':>8} {total / 2**20:>9,.0f}")
    return took
