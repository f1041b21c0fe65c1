"""`make scale`'s timing of the hot requests (bench/scale.py): each account's apps on both
databases in turn, one request at a time, and the CPU time PostgreSQL spent on them."""

import http.client
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import psycopg

from bench import scale_data as data
from bench.harness import Client, GpodderSession, percentile, signed_in_cookie, token_for
from bench.scale_databases import BIG, SMALL, dsn, on_database
from tests import servers

SAMPLES = int(os.environ.get("SCALE_SAMPLES", "30"))  # per request kind and account


T = TypeVar("T")


def again_if_closed(conn: http.client.HTTPConnection, request: Callable[[], T]) -> T:
    """`request()`, sent once more on a new connection when the server had closed the kept-alive
    one (gunicorn closes one idle for 5 s), as an app does: such a request was never read."""
    try:
        return request()
    except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
        conn.close()
        return request()


class Account:
    """One account's apps on one database's gunicorn: a /v1/ client, a gpodder app (cookie
    after its first request, as gPodder and AntennaPod do), and a signed-in browser."""

    def __init__(self, port: int, number: int, database: str, shape: data.Shape):
        self.port, self.number, self.database, self.shape = port, number, database, shape
        from django.contrib.auth import get_user_model

        with on_database(database):
            user = get_user_model().objects.get(pk=number)
            self.api = Client(port, token_for(user))
            self.cookie = signed_in_cookie(user)
        self.gpodder = GpodderSession(port, data.username(number), data.PASSWORD)
        self.pages = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        self.name = data.username(number)
        self.n = 0
        self.added: list[str] = []
        self.deleting: list[float] = []  # seconds from each DELETE to its SUCCESS

    def reconnect(self) -> None:
        """New connections, as an app opens after a pause: gunicorn closes one idle for its
        keep-alive time, which the other accounts' turns can outlast."""
        for conn in (self.api.conn, self.gpodder.conn, self.pages):
            conn.close()  # http.client connects again on the next request

    def api_call(self, method: str, path: str, body: Any = None) -> tuple[int, Any, float]:
        return again_if_closed(self.api.conn, lambda: self.api.call(method, path, body))

    def api_ms(self, method: str, path: str, body: Any = None, expect: int = 200) -> float:
        status, answer, seconds = self.api_call(method, path, body)
        if status != expect:
            raise RuntimeError(f"{method} {path} on {self.database} answered {status}: {answer}")
        return seconds * 1000

    def page_ms(self, path: str) -> float:
        def get() -> float:
            start = time.perf_counter()
            self.pages.request("GET", path, headers=dict([self.cookie.split(": ", 1)]))
            response = self.pages.getresponse()
            response.read()
            if response.status != 200:
                raise RuntimeError(f"GET {path} on {self.database} answered {response.status}")
            return (time.perf_counter() - start) * 1000

        return again_if_closed(self.pages, get)

    def gpodder_ms(self, method: str, path: str, body: Any = None) -> float:
        call = self.gpodder.call
        return again_if_closed(self.gpodder.conn, lambda: call(method, path, body))[1] * 1000

    # The requests, each answering its time in ms.

    def get_one(self) -> float:
        return self.api_ms("GET", f"/v1/subscriptions/{data.subscription_guid(self.number, 2)}")

    def list_since(self) -> float:
        since = (data.T0 + timedelta(seconds=data.joined(self.number) + 3600)).isoformat()
        since = since.replace("+00:00", "Z")
        return self.api_ms("GET", f"/v1/subscriptions?since={since}&per_page=50")

    def gpodder_pull(self) -> float:
        since = int((data.T0 + timedelta(seconds=data.joined(self.number) + 3600)).timestamp())
        return self.gpodder_ms("GET", f"/api/2/subscriptions/{self.name}/phone.json?since={since}")

    def episodes_since(self) -> float:
        at = data.T0 + timedelta(seconds=data.action_received(self.number, 14))
        path = f"/api/2/episodes/{self.name}.json?since={int(at.timestamp())}"
        return self.gpodder_ms("GET", path)

    def podcasts_page(self) -> float:
        return self.page_ms("/podcasts/")

    def history_page(self) -> float:
        return self.page_ms("/history/")

    def add(self) -> float:
        self.n += 1
        url = f"https://added.example.net/{self.number}/{self.n}.xml"
        status, answer, seconds = self.api_call(
            "POST", "/v1/subscriptions", {"subscriptions": [{"feed_url": url}]}
        )
        if status != 200 or not answer["success"]:
            raise RuntimeError(f"an add on {self.database} answered {status}: {answer}")
        self.added.append(answer["success"][0]["guid"])
        return seconds * 1000

    def patch(self) -> float:
        self.n += 1
        guid = data.subscription_guid(self.number, 3)
        return self.api_ms("PATCH", f"/v1/subscriptions/{guid}", {"is_subscribed": self.n % 2 == 0})

    def gpodder_upload(self) -> float:
        self.n += 1
        url = f"https://uploaded.example.net/{self.number}/{self.n}.xml"
        path = f"/api/2/subscriptions/{self.name}/phone.json"
        return self.gpodder_ms("POST", path, {"add": [url], "remove": []})

    def episode_upload(self) -> float:
        self.n += 1
        feed = self.shape.feed_of(self.number, 4)
        action = {"podcast": data.feed_url(feed), "episode": data.episode_url(feed, 3),
                  "action": "play", "started": 0, "position": self.n, "total": 1800,
                  "timestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S"),
                  "device": "phone"}  # fmt: skip
        return self.gpodder_ms("POST", f"/api/2/episodes/{self.name}.json", [action])

    def delete(self) -> float:
        """DELETE one added subscription: the 202's time; the time to SUCCESS, polled by the
        app as the API says, goes to `deleting`."""
        guid = self.added.pop()
        start = time.perf_counter()
        status, answer, seconds = self.api_call("DELETE", f"/v1/subscriptions/{guid}")
        if status != 202:
            raise RuntimeError(f"a DELETE on {self.database} answered {status}: {answer}")
        deadline = time.monotonic() + 60
        while True:
            _, state, _ = self.api_call("GET", f"/v1/deletions/{answer['deletion_id']}")
            if state["status"] == "SUCCESS":
                break
            if state["status"] != "PENDING" or time.monotonic() > deadline:
                raise RuntimeError(f"deletion on {self.database} ended {state}")
            time.sleep(0.002)
        self.deleting.append((time.perf_counter() - start) * 1000)
        return seconds * 1000


KINDS: list[tuple[str, Callable[[Account], float]]] = [
    ("GET one (/v1/)", Account.get_one),
    ("a page of the list with since (/v1/)", Account.list_since),
    ("gpodder subscription pull since", Account.gpodder_pull),
    ("episode download since (gpodder)", Account.episodes_since),
    ("podcasts page", Account.podcasts_page),
    ("history page", Account.history_page),
    ("add one (/v1/)", Account.add),
    ("PATCH (/v1/)", Account.patch),
    ("gpodder subscription upload", Account.gpodder_upload),
    ("episode upload (gpodder)", Account.episode_upload),
    ("DELETE (/v1/), the 202", Account.delete),
]


def database_cpu(pg: servers.Server, database: str) -> dict[int, float]:
    """CPU seconds used so far by each PostgreSQL backend connected to `database` (the web
    processes' and the worker's kept connections), by pid: what its requests cost the database.
    """
    with psycopg.connect(dsn(pg, "postgres")) as conn:
        pids = [pid for (pid,) in conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s", [database])]  # fmt: skip
    tick = os.sysconf("SC_CLK_TCK")
    used = {}
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue  # ended meanwhile
        fields = stat[stat.rindex(")") + 2 :].split()
        used[pid] = (int(fields[11]) + int(fields[12])) / tick
    return used


def cpu_between(before: dict[int, float], after: dict[int, float]) -> float | None:
    """CPU seconds spent between the two readings; None when a backend ended in between (its
    share is unknown): the runs keep their connections (CONN_MAX_AGE) so that none does."""
    if set(before) - set(after):
        return None
    return sum(used - before.get(pid, 0.0) for pid, used in after.items())


def positions(shape: data.Shape) -> list[tuple[str, int]]:
    return [("start", 1), ("middle", shape.accounts // 2), ("end", shape.accounts)]


def timed(
    pg: servers.Server, small_port: int, big_port: int
) -> tuple[list[tuple[str, str, float, float]], dict[str, float | None]]:
    """(request, position, p50 small, p50 at scale) for every request and position; and the
    CPU time PostgreSQL spent per request of each kind at scale, in ms."""
    accounts = {}
    for (where, small_n), (_, big_n) in zip(positions(SMALL), positions(BIG), strict=True):
        accounts[where] = (
            Account(small_port, small_n, "opa_small", SMALL),
            Account(big_port, big_n, "opa_scale", BIG),
        )
    results = []
    cpu: dict[str, float | None] = {}
    for label, request in KINDS:
        before = database_cpu(pg, "opa_scale")
        for where, pair in accounts.items():
            took: tuple[list[float], list[float]] = ([], [])
            for one in pair:  # the first of each: a connection, a login, a cold cache
                one.reconnect()
                if request is Account.delete:
                    one.add()
                request(one)
            for _ in range(SAMPLES):
                for side, one in enumerate(pair):
                    if request is Account.delete:
                        one.add()
                    took[side].append(request(one))
            results.append((label, where, percentile(took[0], 0.5), percentile(took[1], 0.5)))
        spent = cpu_between(before, database_cpu(pg, "opa_scale"))
        cpu[label] = None if spent is None else spent * 1000 / (3 * (SAMPLES + 1))
    for where, pair in accounts.items():
        samples = [one.deleting[1:] for one in pair]
        results.append(
            ("DELETE -> SUCCESS through the worker", where,
             percentile(samples[0], 0.5), percentile(samples[1], 0.5))
        )  # fmt: skip
    return results, cpu
