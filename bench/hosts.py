"""`make soak-hosts`: the service as several machines run it, on loopback, and the promises of
docs/operations.md ("Scaling out") checked across them.

Started here: one PostgreSQL with PgBouncer in transaction mode in front (the service on
`DATABASE_POOL_MODE=transaction`), one Redis, two gunicorn servers with the production settings
standing for two web hosts A and B (same SECRET_KEY, each on its own port), Debian's nginx as
the load balancer in front of both (round robin, X-Forwarded-For and X-Forwarded-Proto set,
`NUM_PROXIES=1`), two Celery workers of which only one runs beat, and a feed server.

Then, in order:
1. read-your-writes: a write answered by one host is read by the other at once, for every API
   (/v1/ with a token, gpodder with its session cookie, Nextcloud with app passwords);
2. an app password revoked, then a password changed, on A's pages: what they ended is refused
   by both hosts at once, the old /v1/ access tokens included (every web process hears of the
   change through Redis, accounts.invalidation), each on the first try on each host;
3. the load, HOSTS_SECONDS (120) of apps through nginx, during which gunicorn A is killed
   (SIGKILL to its process group) and later started again, and feeds are added in bursts;
   then every acknowledged write is looked for, every deletion must end SUCCESS having been
   executed once, each feed fetched once per FEED_CHECK_INTERVAL it was asked for in, and the
   deletion sweep sent by one beat only, each sweep executed once;
4. the throttle, both hosts started again with a low THROTTLE_USER_RATE: requests sent to both
   are counted once, and anonymous clients behind nginx are told apart by X-Forwarded-For.

It prints a table of each check, its figure and target, and exits non-zero when one is missed.
Everything it starts is stopped at the end, on failure too.
"""

import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import WORKERS, Gunicorn, django_on, running
from bench.hosts_load import (
    acknowledged,
    beat_once,
    deletions_once,
    drained,
    feed_checks_once,
    load,
)
from bench.hosts_revocation import revocation
from bench.hosts_setup import (
    AUTH_CACHE,
    FEED_INTERVAL,
    ROWS,
    SWEEP_INTERVAL,
    THROTTLE_RATE,
    FeedServer,
    Nginx,
)
from bench.hosts_throttle import throttles
from bench.hosts_writes import read_your_writes
from tests import servers


def table() -> None:
    width = max(len(name) for name, *_ in ROWS)
    print(f"\n| {'check':<{width}} | measured | target | met |\n|{'-' * (width + 2)}|---|---|---|")
    for name, measured, target, met in ROWS:
        print(f"| {name:<{width}} | {measured} | {target} | {'met' if met else 'MISSED'} |")


@contextmanager
def stopped_on_sigterm() -> Iterator[None]:
    """SIGTERM (a CI timeout, `kill`) ends the run through its `finally` blocks, which stop
    every process it started."""
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main() -> int:
    began = time.monotonic()
    logs = Path(tempfile.mkdtemp(prefix="opa-hosts-"))
    print(f"soak-hosts: logs in {logs}", flush=True)
    with (
        stopped_on_sigterm(),
        servers.postgres() as pg,
        servers.pgbouncer(pg) as bouncer,
        servers.redis() as redis_server,
    ):
        env = django_on(
            pg,
            redis_server,
            "opa_hosts",
            # Through the pooler, as a large deployment runs (migrated through it too).
            DATABASE_URL=f"postgres://postgres@{bouncer.host}:{bouncer.port}/opa_hosts",
            DATABASE_POOL_MODE="transaction",
            NUM_PROXIES="1",
            THROTTLE_LOGIN_RATE="100000/min",  # the checks send wrong passwords on purpose
            FEED_CHECK_INTERVAL=str(FEED_INTERVAL),
            FEED_FETCH_ALLOWED_NETWORKS="127.0.0.0/8",
            DELETION_SWEEP_INTERVAL=str(SWEEP_INTERVAL),
            # A deletion whose message died with A is sent again by the sweep after this.
            DELETION_RESEND_AFTER="15",
            AUTH_USER_CACHE_SECONDS=str(AUTH_CACHE),
        )
        from django.db import connection

        feeds = FeedServer()
        a = Gunicorn("config.wsgi", env, logs / "host-a.log")
        b = Gunicorn("config.wsgi", env, logs / "host-b.log")
        nginx = Nginx([a.port, b.port], logs / "nginx")
        worker_env = {**env, "LOG_LEVEL": "INFO"}  # the task results are counted in the logs
        worker_logs = [logs / "worker-1.log", logs / "worker-2.log"]
        first, second = (servers.Worker(worker_env, log) for log in worker_logs)
        with running(feeds, nginx, a, b, first, second):
            a.start()
            b.start()
            nginx.start()
            first.start(beat=True, name="worker-1")
            second.start(beat=False, name="worker-2")
            ports = {"A": a.port, "B": b.port}
            print(
                f"hosts A :{a.port}, B :{b.port} ({WORKERS} web workers each), nginx "
                f":{nginx.port}, PgBouncer :{bouncer.port}, PostgreSQL :{pg.port}",
                flush=True,
            )

            added = read_your_writes(ports, feeds)
            revocation(ports)
            ledger, burst_times = load(nginx, a, env, feeds)
            connection.close()
            acknowledged(ledger)
            all_done = drained(env, 120)
            print(f"  feed checks {'all run' if all_done else 'STILL RUNNING after 120 s'}")
            added += [url for _, url in ledger.added + ledger.uploaded]
            feed_checks_once(feeds, burst_times, added)
            first.stop()  # warm shutdown: the tasks under way end, and their results are logged
            second.stop()
            deletions_once(worker_logs)
            beat_once(worker_logs)

            # The throttle's rate is a setting of the web processes: both hosts start again.
            for host in (a, b):
                host.stop()
                host.env = {**env, "THROTTLE_USER_RATE": f"{THROTTLE_RATE}/min"}
                host.start()
            throttles(ports, nginx)
            connection.close()
    table()
    print(f"\nThe whole run: {time.monotonic() - began:.0f} s; logs in {logs}")
    missed = [name for name, *_, met in ROWS if not met]
    print(
        f"\n{len(ROWS) - len(missed)} of {len(ROWS)} checks met"
        + (f"; missed: {', '.join(missed)}" if missed else "")
    )
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
