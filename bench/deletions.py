"""Deletions through the Celery workers: DELETE to SUCCESS with an idle worker, and 1,000
deletions queued first, then drained by two."""

import time
from pathlib import Path
from typing import Any

from bench.harness import Client, Gunicorn, percentile, row, running, token_for, wait_for
from tests import servers


def bench_deletions(app: Gunicorn, env: dict[str, str], logs: Path) -> None:
    from deletions.models import Deletion
    from subscriptions import services
    from tests.factories import UserFactory

    user: Any = UserFactory()
    client = Client(app.port, token_for(user))

    def subscribe(prefix: str, count: int) -> list[str]:
        guids = []
        for start in range(0, count, 500):
            entries = [
                services.AddEntry(f"https://{prefix}.example.com/{n}.xml")
                for n in range(start, min(count, start + 500))
            ]
            added = services.subscription_add_many(user=user, entries=entries).success
            guids += [str(sub.guid) for sub in added]
        return guids

    def delete(guid: str) -> int:
        status, body, _ = client.call("DELETE", f"/v1/subscriptions/{guid}")
        assert status == 202, (status, body)
        return int(body["deletion_id"])

    print("Deletions")
    # Adds ask for feed checks, as in production; the bench's feeds are made up, so no worker
    # here fetches them.
    worker = servers.Worker(env, logs / "idle.log").start(
        concurrency=2, beat=False, queues="deletions"
    )
    with running(worker):
        wait_for(lambda: "ready." in worker.log.read_text(), 60, "the idle worker")
        latencies = []
        for guid in subscribe("latency", 200):
            start = time.perf_counter()
            deletion_id = delete(guid)
            while Deletion.objects.filter(pk=deletion_id, status="PENDING").exists():
                time.sleep(0.001)
            latencies.append(time.perf_counter() - start)
    ms = [s * 1000 for s in latencies]
    row(
        "DELETE -> SUCCESS, idle worker",
        f"p50 {percentile(ms, 0.5):.0f} ms, p95 {percentile(ms, 0.95):.0f} ms",
        "p50 <= 200 ms",
    )

    # Queued with no worker running, so the drain is the workers' own speed.
    ids = [delete(guid) for guid in subscribe("drain", 1000)]
    workers = [servers.Worker(env, logs / f"drain{n}.log") for n in range(2)]
    with running(*workers):
        start = time.perf_counter()
        for n, drainer in enumerate(workers):
            drainer.start(concurrency=1, beat=False, name=f"drain{n}", queues="deletions")
        wait_for(
            lambda: not Deletion.objects.filter(pk__in=ids, status="PENDING").exists(),
            600,
            "the drain",
        )
        drained = time.perf_counter() - start
    done = Deletion.objects.filter(pk__in=ids, status="SUCCESS").count()
    row(
        "1,000 deletions, 2 workers",
        f"drained in {drained:.1f} s from their start ({1000 / drained:.0f}/s), {done} SUCCESS",
    )
