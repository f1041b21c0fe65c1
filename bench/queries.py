"""In-process counts, the same on every run and machine: SQL queries per request at the
smallest and largest batch, page and history (/v1/, gpodder, episodes, Nextcloud), and Python
calls per request (BENCH_ONLY=queries)."""

import json
import uuid
from base64 import b64encode
from collections.abc import Callable
from typing import Any

from bench.episodes import play
from bench.harness import row, token_for


def bench_calls() -> None:
    """Python function calls per request, in this process through Django's WSGI handler: unlike
    times, the same on every run and every machine."""
    import cProfile
    import io
    import pstats

    from django.core.handlers.wsgi import WSGIHandler

    from accounts import active as auth
    from subscriptions import services
    from tests.factories import UserFactory

    user: Any = UserFactory()
    token = token_for(user)
    entries = [services.AddEntry(f"https://calls.example.com/{i}") for i in range(50)]
    first = services.subscription_add_many(user=user, entries=entries).success[0]
    handler = WSGIHandler()

    def calls(url: str) -> int:
        path, _, query = url.partition("?")
        environ = {
            "REQUEST_METHOD": "GET",
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "80",
            "HTTP_HOST": "127.0.0.1",
            "HTTP_AUTHORIZATION": f"Bearer {token}",
            "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(),
        }
        auth.active_users.add(user.pk, auth.password_mark(user.password))  # as while an app syncs
        status: list[str] = []

        def start_response(answered: str, headers: Any, *exc_info: Any) -> Any:
            status.append(answered)
            return io.BytesIO().write

        profile = cProfile.Profile()
        profile.enable()
        body = b"".join(handler(environ, start_response))
        profile.disable()
        if not status[0].startswith("200"):
            raise RuntimeError(f"{url} answered {status[0]}: {body[:300]!r}")
        return pstats.Stats(profile).total_calls  # type: ignore[attr-defined]

    print("Python calls per request")
    for name, url in (
        ("GET /v1/subscriptions/{guid}", f"/v1/subscriptions/{first.guid}"),
        ("GET /v1/subscriptions, 50 items", "/v1/subscriptions?per_page=50"),
    ):
        # The fewest of a few: the first of a kind fills caches, and one in THROTTLE_SYNC_SECONDS
        # also sends the throttle's counts to Redis.
        row(f"Python calls: {name}", f"{min(calls(url) for _ in range(5)):,}")


def gpodder_query_counter() -> tuple[str, Callable[..., int]]:
    """A new user's gpodder app in-process, logged in (the session cookie): the username, and a
    function that makes a request and answers how many SQL queries it made."""
    from django.db import connection
    from django.test import Client as DjangoClient
    from django.test.utils import CaptureQueriesContext

    from tests.factories import UserFactory

    user: Any = UserFactory(with_password="bench-password")
    client = DjangoClient()
    basic = "Basic " + b64encode(f"{user.username}:bench-password".encode()).decode()
    client.post(f"/api/2/auth/{user.username}/login.json", HTTP_AUTHORIZATION=basic)

    def queries(method: str, path: str, body: Any = None) -> int:
        with CaptureQueriesContext(connection) as captured:
            response = getattr(client, method)(
                path, data=json.dumps(body) if body else None, content_type="application/json"
            )
            if response.streaming:  # what it reads, and notes, while the answer is written
                b"".join(response.streaming_content)
        assert response.status_code == 200, (
            path,
            response.status_code,
            getattr(response, "content", b"")[:300],
        )
        return len(captured.captured_queries)

    return user.username, queries


def bench_gpodder_queries() -> None:
    """SQL queries of the gpodder API's sync requests, on the session cookie: the same for 10 URLs
    as for 1,000, and for one device as for twenty."""
    name, queries = gpodder_query_counter()
    counter = iter(range(10**9))

    def upload(n: int) -> int:
        batch = next(counter)
        urls = [f"https://gq.example.com/{batch}/{i}" for i in range(n)]
        return queries("post", f"/api/2/subscriptions/{name}/phone.json", {"add": urls})

    def pull_with_devices(devices: int) -> int:
        for device in range(devices):
            queries("get", f"/api/2/subscriptions/{name}/d{device}.json?since=0")
        # A pull whose answered timestamp moved since the device's last also notes it (one
        # query more, docs/gpodder-api.md "Timestamps"): the pull counted follows one of its own.
        queries("get", f"/api/2/subscriptions/{name}/d0.json?since=0")
        return queries("get", f"/api/2/subscriptions/{name}/d0.json?since=0")

    upload(1)  # the device's first request creates it
    for label, run, small, large, unit in (
        ("gpodder upload", upload, 10, 1000, "URLs"),
        ("gpodder pull since=0", pull_with_devices, 1, 20, "devices"),
    ):
        few, many = run(small), run(large)
        verdict = "constant" if few == many else "GROWS"
        row(
            f"queries: {label}",
            f"{few} at {small} {unit}, {many} at {large}: {verdict}",
            "constant",
        )
    before = queries("get", f"/api/2/subscriptions/{name}/phone.json?since=0")
    upload(1000)
    after = queries("get", f"/api/2/subscriptions/{name}/phone.json?since=0")
    verdict = "constant" if before == after else "GROWS"
    row(
        "queries: gpodder pull since=0, by subscriptions",
        f"{before} at 1,010, {after} at 2,010: {verdict}",
        "constant",
    )


def bench_episodes_queries() -> None:
    """SQL queries of episode action uploads and downloads, on the session cookie: the same for
    1 action as for 1,000."""

    name, queries = gpodder_query_counter()
    path = f"/api/2/episodes/{name}.json"
    counter = iter(range(10**9))

    def upload(n: int) -> int:
        batch = next(counter)
        return queries("post", path, [play(batch, episode) for episode in range(n)])

    upload(1)  # the device's first upload creates it
    download_one = queries("get", f"{path}?since=0")
    few, many = upload(1), upload(1000)
    verdict = "constant" if few == many else "GROWS"
    row("queries: episode upload", f"{few} at 1 action, {many} at 1,000: {verdict}", "constant")
    download_page = queries("get", f"{path}?since=0")
    # 1,002 actions: a long answer, written as its two chunks are read (episodes.selectors).
    verdict = "constant" if download_one == download_page - 1 else "GROWS"
    row(
        "queries: episode download since=0",
        f"{download_one} at 1 action, {download_page} at 1,002 (one chunk more): {verdict}",
        "constant",
    )


def bench_nextcloud_queries() -> None:
    """SQL queries of the Nextcloud paths' incremental round, Basic on every request (its
    credentials remembered, as after an app's first request)."""
    from django.db import connection
    from django.test import Client as DjangoClient
    from django.test.utils import CaptureQueriesContext

    from tests.factories import UserFactory

    user: Any = UserFactory(with_password="bench-password")
    basic = "Basic " + b64encode(f"{user.username}:bench-password".encode()).decode()
    client = DjangoClient(HTTP_AUTHORIZATION=basic)
    base = "/index.php/apps/gpoddersync"

    def queries(method: str, path: str, body: Any = None) -> int:
        with CaptureQueriesContext(connection) as captured:
            response = getattr(client, method)(
                path, data=json.dumps(body) if body else None, content_type="application/json"
            )
        assert response.status_code == 200, (path, response.status_code, response.content[:300])
        return len(captured.captured_queries)

    queries("get", f"{base}/subscriptions?since=0")  # the device is made, the password checked
    pull = queries("get", f"{base}/subscriptions?since=0")
    upload = queries("post", f"{base}/episode_action/create", [play(0, 0)])
    download = queries("get", f"{base}/episode_action?since=0")
    row(
        "queries: nextcloud incremental round",
        f"{pull} pull + {upload} upload + {download} download = {pull + upload + download}",
    )


def bench_queries() -> None:
    """SQL queries per request, at the smallest and largest batch, page and history."""
    from django.db import connection
    from django.test import Client as DjangoClient
    from django.test.utils import CaptureQueriesContext

    from accounts import active as auth
    from subscriptions import services
    from tests.factories import UserFactory
    from tests.helpers import forget_all

    user: Any = UserFactory()
    client = DjangoClient(HTTP_AUTHORIZATION=f"Bearer {token_for(user)}")
    counter = iter(range(10**9))

    def queries(method: str, path: str, body: Any = None) -> int:
        auth.active_users.add(user.pk, auth.password_mark(user.password))  # as while an app syncs
        with CaptureQueriesContext(connection) as captured:
            response = getattr(client, method)(
                path, data=json.dumps(body) if body else None, content_type="application/json"
            )
        assert response.status_code < 300, (path, response.status_code, response.content[:300])
        return len(captured.captured_queries)

    def add(n: int) -> int:
        batch = next(counter)
        entries = [{"feed_url": f"https://q.example.com/{batch}/{i}"} for i in range(n)]
        return queries("post", "/v1/subscriptions", {"subscriptions": entries})

    def with_history(changes: int) -> str:
        """A subscription whose guid changed `changes` times; its first guid."""
        batch = next(counter)
        [sub] = services.subscription_add_many(
            user=user, entries=[services.AddEntry(f"https://h.example.com/{batch}")]
        ).success
        first = current = sub.guid
        for _ in range(changes):
            new = uuid.uuid4()
            services.subscription_update(
                user=user, guid=current, change=services.SubscriptionUpdate(new_guid=new)
            )
            current = new
        return str(first)

    def one(method: str, body: Any = None) -> Callable[[int], int]:
        return lambda changes: queries(method, f"/v1/subscriptions/{with_history(changes)}", body)

    def page(query: str) -> Callable[[int], int]:
        return lambda size: queries("get", f"/v1/subscriptions?per_page={size}{query}")

    cases: list[tuple[str, Callable[[int], int], int, int, str]] = [
        ("POST /v1/subscriptions", add, 1, 500, "entries"),
        ("GET /v1/subscriptions/{guid}", one("get"), 0, 20, "guid changes"),
        (
            "PATCH /v1/subscriptions/{guid}",
            one("patch", {"is_subscribed": False}),
            0,
            20,
            "guid changes",
        ),
        ("GET /v1/subscriptions", page(""), 1, 500, "per page"),
        ("GET /v1/subscriptions?since", page("&since=2000-01-01T00:00:00Z"), 1, 500, "per page"),
        ("DELETE /v1/subscriptions/{guid}", one("delete"), 0, 20, "guid changes"),
    ]
    print("SQL queries per request")
    for name, run, small, large, unit in cases:
        few, many = run(small), run(large)
        verdict = "constant" if few == many else "GROWS"
        row(
            f"queries: {name}", f"{few} at {small} {unit}, {many} at {large}: {verdict}", "constant"
        )
    bench_gpodder_queries()
    bench_episodes_queries()
    guid = with_history(0)
    forget_all()  # as a process that has not checked the user in AUTH_USER_CACHE_SECONDS
    with CaptureQueriesContext(connection) as cold:
        client.get(f"/v1/subscriptions/{guid}")
    row(
        "queries: GET /v1/subscriptions/{guid}, user not checked in the last 10 s",
        str(len(cold.captured_queries)),
    )
    deletion = client.delete(f"/v1/subscriptions/{with_history(0)}").json()["deletion_id"]
    row("queries: GET /v1/deletions/{id}", str(queries("get", f"/v1/deletions/{deletion}")))
