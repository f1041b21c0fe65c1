"""`make scale`: the service at a million accounts, against the same accounts on a small
database.

On one PostgreSQL (tests/servers.py, fsync off) it loads two databases with bench/scale_data.py:
"small", 1,000 accounts over 100 feeds, and "scale", SCALE x 1,000,000 accounts over
SCALE x 100,000 feeds (10 subscriptions, 20 episode actions, 2 devices each, and the rest that
module lists). It prints each table's load time and size, its indexes' sizes, then serves both
databases at once, each with gunicorn (config/gunicorn.py, the production settings) and a
Celery worker, and times every hot request for the accounts at the start, the middle and the
end of the tables, one request at a time on a kept-alive connection as `make bench` does,
alternating between the two databases so that the machine's load weighs on both alike. Each
p50 at scale is compared with the same account's on the small database: within 1.5x is the
target. Last, it runs each of those requests, the admin's list pages, its overview and a user's
page, and the sweeps in-process against the large database, asks PostgreSQL for the plan of every
statement they sent, prints the scans, and writes the plans to bench/out/scale-plans.txt: no
sequential scan of a loaded table is the target. Exits non-zero on a missed target.
"""

import os
import sys
import tempfile
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import OUT, Gunicorn, django_on, running
from bench.scale_databases import BIG, SCALE, SMALL, TUNING, dsn, loaded, tuned
from bench.scale_plans import plans
from bench.scale_timing import SAMPLES, timed
from tests import servers

LOAD_TARGET = 30 * 60  # seconds, for the whole load of the large database
RATIO_TARGET = 1.5


def ratios(results: list[tuple[str, str, float, float]], cpu: dict[str, float | None]) -> int:
    """Print the p50s against their target, and PostgreSQL's CPU per request; return how many
    p50s missed it."""
    missed = 0
    print(f"\n| request | account | small ({SMALL.accounts:,}) | at scale ({BIG.accounts:,}) "
          "| ratio | target |\n|---|---|---|---|---|---|")  # fmt: skip
    for label, where, small, big in results:
        ratio = big / small
        met = ratio <= RATIO_TARGET
        missed += not met
        print(f"| {label} | {where} | {small:.2f} ms | {big:.2f} ms | {ratio:.2f} | "
              f"<= {RATIO_TARGET}: {'met' if met else 'MISSED'} |")  # fmt: skip
    print("\n| request | PostgreSQL CPU per request at scale |\n|---|---|")
    for label, ms in cpu.items():
        print(f"| {label} | {'a backend ended: unknown' if ms is None else f'{ms:.2f} ms'} |")
    return missed


def main() -> int:
    OUT.mkdir(exist_ok=True)
    logs = Path(tempfile.mkdtemp(prefix="opa-scale-"))
    # SCALE_KEEP=<folder>: keep the loaded server there, and time and plan it again on the next
    # run without loading it again (its accounts then carry the earlier runs' writes).
    keep = Path(os.environ["SCALE_KEEP"]) if os.environ.get("SCALE_KEEP") else None
    marker = keep / "loaded-in-seconds" if keep else None
    # The marker names the scale loaded: another, or none (a load cut short), loads afresh.
    kept = marker is not None and marker.exists() and marker.read_text().split()[0] == str(SCALE)
    with servers.postgres(folder=keep) as pg, servers.redis() as redis_server:
        tuned(pg)
        with psycopg.connect(dsn(pg, "postgres"), autocommit=True) as conn:
            for name in ("opa_plain",) if kept else ("opa_plain", "opa_small", "opa_scale"):
                conn.execute(f"DROP DATABASE IF EXISTS {name}")
        env = django_on(pg, redis_server, "opa_plain")
        print(f"make scale: PostgreSQL {', '.join(f'{k}={v}' for k, v in TUNING.items())}")
        if kept:
            assert marker is not None
            took = float(marker.read_text().split()[1])
            print(f"the databases of {keep}, loaded earlier in {took:.0f} s")
        else:
            loaded(pg, "opa_small", SMALL)
            took = loaded(pg, "opa_scale", BIG)
            if marker is not None:
                marker.write_text(f"{SCALE} {took:.0f}")
        # Each database's processes on their own Redis databases (broker 1 and 3, caches 2 and
        # 4): a worker must never take the other database's task.
        base = redis_server.url.rsplit("/", 1)[0]
        environments = {
            name: {**env, "DATABASE_URL": dsn(pg, name).replace("postgresql", "postgres", 1),
                   "REDIS_URL": f"{base}/{n}", "CONN_MAX_AGE": "3600"}
            for name, n in (("opa_small", 1), ("opa_scale", 3))
        }  # fmt: skip
        small_app = Gunicorn("config.wsgi", environments["opa_small"], logs / "small.log")
        big_app = Gunicorn("config.wsgi", environments["opa_scale"], logs / "scale.log")
        small_worker = servers.Worker(environments["opa_small"], logs / "small-worker.log")
        big_worker = servers.Worker(environments["opa_scale"], logs / "scale-worker.log")
        with running(small_app, big_app, small_worker, big_worker):
            small_app.start()
            big_app.start()
            # Deletions only: the adds' feed checks (of feeds that do not exist) would queue the
            # deletions behind them, as docs/operations.md says a deployment must not.
            small_worker.start(queues="celery,deletions")
            big_worker.start(queues="celery,deletions")
            print(f"\np50 of {SAMPLES} requests each, one at a time, both databases in turn")
            results, cpu = timed(pg, small_app.port, big_app.port)
        missed = ratios(results, cpu)  # printed before the plans, which take a while
        bad_plans = plans(pg)
    print("\n| figure | measured | | | | target |\n|---|---|---|---|---|---|")
    print(f"| load of {BIG.accounts:,} accounts | | | {took:.0f} s | | <= {LOAD_TARGET} s: "
          f"{'met' if took <= LOAD_TARGET else 'MISSED'} |")  # fmt: skip
    print(f"| sequential scans of a loaded table | | | {len(bad_plans)} | | 0: "
          f"{'met' if not bad_plans else 'MISSED'} |")  # fmt: skip
    for line in bad_plans:
        print(f"  sequential scan: {line}")
    return 1 if missed or bad_plans or took > LOAD_TARGET else 0


if __name__ == "__main__":
    sys.exit(main())
