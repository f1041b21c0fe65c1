"""The /v1/ API under wrk beside the floor (bench/floor.py): GET one and the list, adds one
request at a time, the web workers' memory after each; with BENCH_PROFILE=1, a py-spy profile
of one web worker under the GET-one load."""

import http.client
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.harness import (
    OUT,
    ROUNDS,
    SECONDS,
    Client,
    Gunicorn,
    Load,
    cpu_per_request,
    described,
    described_cpu,
    percentile,
    row,
    token_for,
    wrk,
)


@dataclass(frozen=True)
class Round:
    """One load each of the floor, GET one and the list, run one after the other."""

    floor: Load
    get_one: Load
    listed: Load
    get_alone: Load  # at one connection
    listed_alone: Load


def answer(port: int, path: str, token: str) -> tuple[int, Any]:
    """A GET's status and JSON body."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("GET", path, headers={"Authorization": f"Bearer {token}"})
    response = connection.getresponse()
    return response.status, json.loads(response.read())


def bench_http(app: Gunicorn, floor: Gunicorn) -> None:
    from subscriptions import services
    from tests.factories import UserFactory

    rss_start = app.rss_mb()
    served = 0

    # GET one, checked against the floor first.
    reader: Any = UserFactory()
    token = token_for(reader)
    [sub] = services.subscription_add_many(
        user=reader, entries=[services.AddEntry("https://bench.example.com/one.xml")]
    ).success
    path = f"/v1/subscriptions/{sub.guid}"
    [moved] = services.subscription_add_many(
        user=reader, entries=[services.AddEntry("https://bench.example.com/moved.xml")]
    ).success
    services.subscription_update(
        user=reader, guid=moved.guid, change=services.SubscriptionUpdate(new_guid=uuid.uuid4())
    )
    for checked in (path, f"/v1/subscriptions/{moved.guid}", f"/v1/subscriptions/{uuid.uuid4()}"):
        if answer(floor.port, checked, token) != answer(app.port, checked, token):
            raise RuntimeError(f"The floor does not answer GET {checked} as the service does")

    # The list: a page of 50 out of 10,000, with `since`.
    lister: Any = UserFactory()
    for batch in range(20):
        entries = [services.AddEntry(f"https://list.example.com/{batch}/{i}") for i in range(500)]
        services.subscription_add_many(user=lister, entries=entries)
    time.sleep(0.01)
    from api.fields import format_timestamp
    from core.clock import now

    since = format_timestamp(now())
    time.sleep(0.01)
    from subscriptions.models import Subscription

    for guid in Subscription.objects.filter(user=lister).values_list("guid", flat=True)[::200]:
        services.subscription_update(
            user=lister, guid=guid, change=services.SubscriptionUpdate(is_subscribed=False)
        )
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")  # as autovacuum would have, by the time it matters
    list_token = token_for(lister)
    list_path = f"/v1/subscriptions?since={since.replace('+', '%2B')}&per_page=50"
    status, body, _ = Client(app.port, list_token).call("GET", list_path)
    if status != 200 or len(body["subscriptions"]) != 50:
        raise RuntimeError(f"the list answered {status}: {body}")

    # The floor, GET one and the list, one after the other, ROUNDS times: the host's load
    # changes from minute to minute, and a ratio of two loads run far apart shows that most.
    wrk(floor.port, path, token, seconds=2)  # warm up: connections, caches
    served += wrk(app.port, path, token, seconds=2).requests
    served += wrk(app.port, list_path, list_token, seconds=2).requests
    rounds = []
    for _ in range(ROUNDS):
        floor_load, get_one = wrk(floor.port, path, token), wrk(app.port, path, token)
        listed = wrk(app.port, list_path, list_token)
        # One connection: each request's own time, with no queue before it.
        get_alone = wrk(app.port, path, token, seconds=SECONDS // 2, connections=1)
        listed_alone = wrk(app.port, list_path, list_token, seconds=SECONDS // 2, connections=1)
        served += sum(load.requests for load in (get_one, listed, get_alone, listed_alone))
        rounds.append(Round(floor_load, get_one, listed, get_alone, listed_alone))

    def each(figure: Callable[[Round], str]) -> str:
        return " / ".join(figure(loads) for loads in rounds)

    def ratios(ratio: Callable[[Round], float]) -> str:
        return " / ".join(f"{ratio(loads):.2f}" for loads in rounds)

    service, floor_kinds = ("service", "PostgreSQL", "Redis"), ("floor", "PostgreSQL")
    print(f"GET one and the list ({ROUNDS} rounds: each figure once a round)")
    row("floor: GET one", each(lambda r: described(r.floor)))
    row("GET /v1/subscriptions/{guid}", each(lambda r: described(r.get_one)))
    row("GET one: req/s vs the floor", ratios(lambda r: r.get_one.rps / r.floor.rps), ">= 0.5")
    row("floor: CPU per request", each(lambda r: described_cpu(r.floor, floor_kinds)))
    row("GET one: CPU per request", each(lambda r: described_cpu(r.get_one, service)))
    row(
        "GET one: floor's CPU per request vs the service's",
        ratios(
            lambda r: cpu_per_request(r.floor, floor_kinds) / cpu_per_request(r.get_one, service)
        ),
        ">= 0.5 (the same, by CPU time)",
    )
    row("list: page of 50 of 10,000 with since", each(lambda r: described(r.listed)))
    row("list vs GET one: p50 ratio", ratios(lambda r: r.listed.p50_ms / r.get_one.p50_ms), "<= 2")
    row(
        "GET one and the list at one connection",
        each(lambda r: f"p50 {r.get_alone.p50_ms:.2f} and {r.listed_alone.p50_ms:.2f} ms"),
    )
    row(
        "list vs GET one at one connection: p50 ratio",
        ratios(lambda r: r.listed_alone.p50_ms / r.get_alone.p50_ms),
        "<= 2",
    )
    row("list: CPU per request", each(lambda r: described_cpu(r.listed, service)))
    row(
        "list vs GET one: CPU per request",
        ratios(lambda r: cpu_per_request(r.listed, service) / cpu_per_request(r.get_one, service)),
        "<= 2 (the same, by CPU time)",
    )
    last = wrk(app.port, "/v1/subscriptions?per_page=50&page=200", list_token)
    served += last.requests
    row("list: last page of 200, no since", f"p50 {last.p50_ms:.2f} ms")
    rss_after_first, served_first = app.rss_mb(), served

    # Adds: one connection, one request at a time, as an app's first sync.
    writer: Any = UserFactory()
    client = Client(app.port, token_for(writer))
    counter = iter(range(10**9))

    def add(n: int) -> float:
        batch = next(counter)
        entries = [{"feed_url": f"https://add.example.com/{batch}/{i}.xml"} for i in range(n)]
        status, body, elapsed = client.call("POST", "/v1/subscriptions", {"subscriptions": entries})
        if status != 200 or len(body["success"]) != n:
            raise RuntimeError(f"an add answered {status}: {body}")
        return elapsed

    print("Add")
    one = [add(1) for _ in range(200)]
    many = [add(500) for _ in range(30)]
    served += 230
    row("POST 1 new entry", f"p50 {percentile(one, 0.5) * 1000:.2f} ms")
    row("POST 500 new entries", f"p50 {percentile(many, 0.5) * 1000:.2f} ms")
    ratio = percentile(many, 0.5) / percentile(one, 0.5)
    row("POST 500 vs POST 1: time ratio", f"{ratio:.1f}", "<= 10")

    rss_end, served_end = app.rss_mb(), served
    # The same mix once more: a process whose memory still grows now leaks; one at a high-water
    # mark (the allocator keeps what the largest bodies needed) stays where it is.
    served += wrk(app.port, path, token).requests + wrk(app.port, list_path, list_token).requests
    client.conn.close()  # idle past gunicorn's keep-alive: the next request connects anew
    for _ in range(30):
        add(500)
    served += 30
    rss_again = app.rss_mb()
    row(
        "web worker RSS (largest)",
        f"{rss_start:.0f} MB at start, {rss_after_first:.0f} MB after {served_first:,} "
        f"requests, {rss_end:.0f} MB after {served_end:,}, {rss_again:.0f} MB "
        f"after the same mix again ({served:,} in all)",
        "<= 120 MB, flat",
    )
    if os.environ.get("BENCH_PROFILE"):
        profile(app, path, token)


def profile(app: Gunicorn, path: str, token: str) -> None:
    """py-spy, sampling one web worker while wrk loads them all."""
    target = OUT / "get-one.speedscope.json"
    spy = subprocess.Popen(
        [str(Path(sys.executable).parent / "py-spy"), "record", "--pid", str(app.workers()[0]),
         "--duration", str(SECONDS), "--rate", "500", "--format", "speedscope",
         "--output", str(target), "--nonblocking"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    wrk(app.port, path, token)
    spy.wait(timeout=60)
    print(f"  profile of GET one: {target} (open in https://www.speedscope.app)")
