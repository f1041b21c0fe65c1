"""Benchmarks: prints figures, asserts nothing. Run with `make bench`.

Starts its own PostgreSQL, Redis and Celery workers (the same helpers the tests use), then
measures, through the full Django stack:
- POST /v1/subscriptions with 1 and 500 entries, GET and PATCH of one subscription;
- GET /v1/subscriptions: a page of 50 out of 10,000, with and without `since`, and the query
  plans behind it;
- DELETE -> SUCCESS latency with an idle worker (p50, p95);
- how long 1,000 deletions take to drain with 2 worker processes.
"""

import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests import servers  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def report(name: str, seconds: list[float]) -> None:
    ms = [s * 1000 for s in seconds]
    print(
        f"{name:<56} n={len(ms):<5} p50={percentile(ms, 0.5):8.2f} ms  "
        f"p95={percentile(ms, 0.95):8.2f} ms  mean={statistics.fmean(ms):8.2f} ms"
    )


def main() -> None:
    with servers.postgres() as pg, servers.redis() as redis_server:
        database_url = f"postgres://postgres@{pg.host}:{pg.port}/opa_bench"
        # The production settings module, as deployed, on the servers started here.
        os.environ.update(
            DJANGO_SETTINGS_MODULE="config.settings.base",
            SECRET_KEY="benchmark-only-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz",
            DATABASE_URL=database_url,
            REDIS_URL=redis_server.url,
            THROTTLE_USER_RATE="1000000/min",
            ALLOWED_HOSTS="testserver",
            SECURE_SSL_REDIRECT="false",
            LOG_LEVEL="WARNING",
        )
        import django
        import psycopg

        with psycopg.connect(
            f"postgresql://postgres@{pg.host}:{pg.port}/postgres", autocommit=True
        ) as conn:
            conn.execute("CREATE DATABASE opa_bench")
        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        run_benchmarks()


def run_benchmarks() -> None:
    import tempfile

    from rest_framework.test import APIClient
    from rest_framework_simplejwt.tokens import RefreshToken

    from deletions import services as deletion_services
    from deletions.models import Deletion
    from tests.factories import UserFactory
    from tests.helpers import subscribe

    user: Any = UserFactory()
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {RefreshToken.for_user(user).access_token}")
    print("opa-subscriptions benchmarks (in-process Django stack, PostgreSQL, Redis)\n")

    def timed(call: object, repeat: int) -> list[float]:
        samples = []
        for _ in range(repeat):
            start = time.perf_counter()
            call()  # type: ignore[operator]
            samples.append(time.perf_counter() - start)
        return samples

    counter = iter(range(10**9))

    def add(n: int) -> None:
        batch = next(counter)
        body = {
            "subscriptions": [
                {"feed_url": f"https://bench.example.com/{batch}/{i}.xml"} for i in range(n)
            ]
        }
        response = api.post("/v1/subscriptions", body, format="json")
        if response.status_code != 200 or len(response.json()["success"]) != n:
            raise RuntimeError(f"add failed: {response.status_code} {response.content[:200]!r}")

    report("POST /v1/subscriptions, 1 new entry", timed(lambda: add(1), 200))
    report("POST /v1/subscriptions, 500 new entries", timed(lambda: add(500), 20))
    existing = {
        "subscriptions": [{"feed_url": f"https://bench.example.com/1/{i}.xml"} for i in range(500)]
    }
    report(
        "POST /v1/subscriptions, 500 existing entries",
        timed(lambda: api.post("/v1/subscriptions", existing, format="json"), 20),
    )
    guid = subscribe(user, "https://bench.example.com/one.xml").guid
    get_one = timed(lambda: api.get(f"/v1/subscriptions/{guid}"), 300)
    report("GET /v1/subscriptions/{guid}", get_one)
    bench_list(get_one)
    flip = iter([True, False] * 1000)
    report(
        "PATCH /v1/subscriptions/{guid} is_subscribed",
        timed(
            lambda: api.patch(
                f"/v1/subscriptions/{guid}", {"is_subscribed": next(flip)}, format="json"
            ),
            300,
        ),
    )

    env = dict(os.environ)
    logs = Path(tempfile.mkdtemp(prefix="opa-bench-"))

    worker = servers.Worker(env, logs / "idle.log").start(concurrency=1)
    try:
        time.sleep(3)  # let it connect
        latencies = []
        for n in range(100):
            guid = subscribe(user, f"https://bench.example.com/latency/{n}.xml").guid
            start = time.perf_counter()
            response = api.delete(f"/v1/subscriptions/{guid}")
            deletion_id = response.json()["deletion_id"]
            while Deletion.objects.filter(pk=deletion_id, status="PENDING").exists():
                time.sleep(0.001)
            latencies.append(time.perf_counter() - start)
        report("DELETE -> SUCCESS, idle worker", latencies)
    finally:
        worker.stop()

    guids = [subscribe(user, f"https://bench.example.com/drain/{n}.xml").guid for n in range(1000)]
    # Queued with no worker running, so the drain is the workers' own speed.
    start = time.perf_counter()
    ids = [deletion_services.deletion_request(user=user, guid=g).pk for g in guids]
    queued = time.perf_counter() - start
    worker = servers.Worker(env, logs / "drain.log")
    try:
        start = time.perf_counter()
        worker.start(concurrency=2)
        while Deletion.objects.filter(pk__in=ids, status="PENDING").exists():
            time.sleep(0.01)
        drained = time.perf_counter() - start
        done = Deletion.objects.filter(pk__in=ids, status="SUCCESS").count()
        print(
            f"{'1,000 deletions, 2 worker processes':<56} queued in {queued:.2f} s; drained "
            f"{drained:.2f} s after the worker started, start-up included "
            f"({1000 / drained:.0f}/s), {done} SUCCESS"
        )
    finally:
        worker.stop()


def bench_list(get_one: list[float]) -> None:
    """A page of 50 out of one user's 10,000 subscriptions, 50 of which changed after `since`."""
    from django.db import connection
    from rest_framework.test import APIClient
    from rest_framework_simplejwt.tokens import RefreshToken

    from config.api.fields import format_timestamp
    from config.clock import now
    from subscriptions import selectors
    from tests.factories import UserFactory

    user: Any = UserFactory()
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {RefreshToken.for_user(user).access_token}")
    for batch in range(20):
        entries = [{"feed_url": f"https://list.example.com/{batch}/{i}"} for i in range(500)]
        api.post("/v1/subscriptions", {"subscriptions": entries}, format="json")
    time.sleep(0.002)
    since = now()
    time.sleep(0.002)
    listed = api.get("/v1/subscriptions", {"per_page": 500}).json()["subscriptions"]
    for item in listed[::10]:
        api.patch(f"/v1/subscriptions/{item['guid']}", {"is_subscribed": False}, format="json")
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")  # as autovacuum would have, by the time it matters

    stamp = format_timestamp(since)
    cases: dict[str, dict[str, Any]] = {
        "page 1, no since": {"per_page": 50},
        "page 200 (the last), no since": {"per_page": 50, "page": 200},
        "since -> 50 changed, page 1": {"per_page": 50, "since": stamp},
        "since -> all 10,000, page 100": {
            "per_page": 50,
            "page": 100,
            "since": "2000-01-01T00:00:00Z",
        },
    }
    get_p50 = percentile(get_one, 0.5)
    for name, params in cases.items():
        samples = timed_get(api, params, 200)
        report(f"GET /v1/subscriptions {name}", samples)
        print(f"{'':<56} p50 ratio to GET one: {percentile(samples, 0.5) / get_p50:.2f}")

    plans = {
        "page 1 with since (50 of 10,000 changed)": selectors.subscription_list(
            user=user, since=since
        )[0:50],
        "page 200 without since": selectors.subscription_list(user=user, since=None)[9950:10000],
    }
    for title, page in plans.items():
        sql, sql_params = page.query.sql_with_params()
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + sql, sql_params)
            plan = [row[0] for row in cursor.fetchall()]
        print(f"\nQuery plan, {title}:")
        print("\n".join("  " + line for line in plan))
    print()


def timed_get(api: Any, params: dict[str, Any], repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        response = api.get("/v1/subscriptions", params)
        samples.append(time.perf_counter() - start)
        if response.status_code != 200:
            raise RuntimeError(f"list failed: {response.status_code} {response.content[:200]!r}")
    return samples


if __name__ == "__main__":
    main()
