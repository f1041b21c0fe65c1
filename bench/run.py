"""Benchmarks, run by `make bench`: prints figures and their targets; asserts nothing.

Starts everything on loopback, the way production runs: PostgreSQL, Redis, the service under
gunicorn with `config/gunicorn.py` and the production settings module, the floor
(`bench/floor.py`) under the same gunicorn settings, and Celery workers. Load comes from wrk
at a fixed concurrency for a fixed time. Figures vary from machine to machine; the ratios are
what to compare. `BENCH_SECONDS` (default 10) and `BENCH_CONNECTIONS` (default 32) tune the
load; `BENCH_PROFILE=1` also records a py-spy profile of one web worker under the GET-one load.

Each area of the run is a module of bench/ (bench/README.md, "Where things are"); AREAS below
lists them in the order they run, with the BENCH_ONLY names that run them alone.
"""

import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import (  # noqa: E402
    catalogue,
    deletions,
    episodes,
    feeds,
    gpodder,
    home,
    hot,
    imports,
    nextcloud,
    peers,
    queries,
    sync,
    v1,
    web,
    wsgi,
)
from bench.harness import (  # noqa: E402
    CONNECTIONS,
    OUT,
    ROWS,
    SECONDS,
    WORKERS,
    Gunicorn,
    django_on,
    postgres_tree,
    redis_tree,
    row,
    running,
    under_test,
)
from tests import servers  # noqa: E402


@dataclass(frozen=True)
class Bench:
    """What the areas run on: the servers, the service's environment, the logs' folder, and the
    service and the floor, started only when an area needs them."""

    pg: servers.Server
    redis: servers.RedisServer
    env: dict[str, str]
    logs: Path
    app: Gunicorn
    floor: Gunicorn


class Area(NamedTuple):
    names: tuple[str, ...]  # the BENCH_ONLY values that run it
    served: str  # "service and floor", "service" (while they serve), or "" (neither)
    run: Callable[[Bench], None]


# Every area in the order of the whole run (no BENCH_ONLY); BENCH_ONLY=<name> runs the areas of
# that name alone (bench/README.md, "Where things are"). BENCH_ONLY=queries, the in-process counts
# alone, is a quick check of a change to them; BENCH_ONLY=nextcloud counts the round's queries too.
AREAS = (
    Area(("v1",), "service and floor", lambda b: v1.bench_http(b.app, b.floor)),
    Area(("deletions",), "service", lambda b: deletions.bench_deletions(b.app, b.env, b.logs)),
    Area(("gpodder",), "service", lambda b: gpodder.bench_gpodder(b.app)),
    Area(("episodes",), "service", lambda b: episodes.bench_episodes(b.app)),
    Area(("nextcloud",), "service", lambda b: nextcloud.bench_nextcloud(b.app)),
    Area(("web",), "service", lambda b: web.bench_web(b.app)),
    Area(("pages",), "service", lambda b: web.bench_pages(b.app)),
    Area(("catalogue",), "service", lambda b: catalogue.bench_catalogue(b.app)),
    Area(("sync",), "service", lambda b: sync.bench_sync(b.app)),
    Area(("apps",), "", lambda b: sync.bench_apps(b.pg, b.redis, b.logs)),
    Area(("peers",), "", lambda b: peers.bench_peers(b.pg, b.redis, b.logs)),
    Area(("wsgi",), "", lambda b: wsgi.bench_wsgi(b.pg, b.redis, b.logs)),
    Area(("queries", "nextcloud"), "", lambda b: queries.bench_nextcloud_queries()),
    Area(("queries",), "", lambda b: queries.bench_queries()),
    Area(("queries",), "", lambda b: queries.bench_calls()),
    Area(("hot",), "", lambda b: hot.bench_hot()),
    Area(("imports",), "", lambda b: imports.bench_imports()),
    Area(("imports",), "", lambda b: imports.bench_opodsync_import()),
    Area(("feeds",), "", lambda b: feeds.bench_feed_parsing(row, catalogue.catalogue_rss)),
    Area(("home",), "", lambda b: home.bench_home(row)),
    Area(("home", "footprint"), "", lambda b: home.bench_footprint(row)),
)


def main() -> None:
    if not shutil.which("wrk"):
        sys.exit("wrk is not installed: `make bench` installs it (Debian: apt-get install wrk)")
    only = os.environ.get("BENCH_ONLY") or None
    chosen = [area for area in AREAS if only is None or only in area.names]
    if not chosen:
        names = sorted({name for area in AREAS for name in area.names})
        sys.exit(f"BENCH_ONLY={only} names no area; the areas: {', '.join(names)}")
    OUT.mkdir(exist_ok=True)
    logs = Path(tempfile.mkdtemp(prefix="opa-bench-"))
    with (
        servers.postgres() as pg,
        servers.redis() as redis_server,
        under_test(postgres_tree(pg), redis_tree(redis_server)),
    ):
        env = django_on(pg, redis_server, "opa_bench")
        print(
            f"opa-subscriptions benchmarks: gunicorn {WORKERS} workers "
            f"(config/gunicorn.py), wrk {CONNECTIONS} connections x {SECONDS} s, "
            f"{os.cpu_count()} cores\n",
            flush=True,
        )
        app = Gunicorn("config.wsgi", env, logs / "app.log")
        floor = Gunicorn("bench.floor:application", env, logs / "floor.log")
        bench = Bench(pg, redis_server, env, logs, app, floor)
        served = [area for area in chosen if area.served]
        if served:
            with running(app, floor):
                app.start()
                if any(area.served == "service and floor" for area in served):
                    floor.start()
                for area in served:
                    area.run(bench)
        for area in chosen:
            if not area.served:
                area.run(bench)
    print("\n| figure | measured | target |\n|---|---|---|")
    for figure, measured, target in ROWS:
        print(f"| {figure} | {measured} | {target} |")
    print(f"\nLogs: {logs}")


if __name__ == "__main__":
    main()
