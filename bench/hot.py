"""The hot requests' Python time, in this process (BENCH_ONLY=hot; bench/README.md, "Each hot
request's Python time"): each request an app's sync round makes, sent through Django's WSGI
handler as the app sends it (its cookie or Basic, its headers, its body), timed whole and in
the database's calls; what is left is Python's own time, the part a faster server cannot hide.
BENCH_HOT_PROFILE=tottime (or cumulative) prints the functions that take the most of it, request
by request, sorted so (the first BENCH_HOT_LINES, 25); BENCH_HOT_PROFILE=sql the statements of
three requests of each kind, with their times. BENCH_HOT_MIDDLEWARE=bare runs them with no
middleware but the session's and the user's, the most a leaner path could save of Django's
middleware (the answers then lack the headers the others add: a measure, not a way to serve)."""

import contextlib
import cProfile
import io
import json
import os
import pstats
import time
from base64 import b64encode
from collections.abc import Callable
from http.cookies import SimpleCookie
from typing import Any

from bench.harness import row, token_for

BARE_MIDDLEWARE = [
    "api.middleware.SessionMiddleware",
    "api.middleware.AuthenticationMiddleware",
    "accounts.sessions.SessionSurfaceMiddleware",
]
REQUESTS = 300  # of each kind, after as many to warm up
PASSWORD = "profile-password-1"


class InProcess:
    """An app talking to Django's WSGI handler in this process: its cookie jar, the time each
    request took and the time its SQL took."""

    def __init__(self, headers: dict[str, str]):
        from django.core.handlers.wsgi import WSGIHandler
        from django.db import connection
        from django.test import override_settings

        bare = os.environ.get("BENCH_HOT_MIDDLEWARE") == "bare"
        with override_settings(MIDDLEWARE=BARE_MIDDLEWARE) if bare else contextlib.nullcontext():
            self.handler = WSGIHandler()  # its middleware is loaded here
        self.headers = headers
        self.cookies: dict[str, str] = {}
        self.sql_seconds = 0.0
        connection.execute_wrappers.append(self._timed)  # until close()

    def _timed(self, execute: Callable[..., Any], *args: Any) -> Any:
        start = time.perf_counter()
        try:
            return execute(*args)
        finally:
            self.sql_seconds += time.perf_counter() - start

    def close(self) -> None:
        from django.db import connection

        connection.execute_wrappers.remove(self._timed)

    def call(self, method: str, url: str, body: bytes = b"", **headers: str) -> tuple[str, bytes]:
        path, _, query = url.partition("?")
        environ: dict[str, Any] = {
            "REQUEST_METHOD": method,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "80",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "REMOTE_ADDR": "127.0.0.1",
            "HTTP_HOST": "127.0.0.1",
            "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(body),
            "CONTENT_LENGTH": str(len(body)),
        }
        for name, value in {**self.headers, **headers}.items():
            key = name.upper().replace("-", "_")
            environ[key if key == "CONTENT_TYPE" else f"HTTP_{key}"] = value
        if self.cookies:
            environ["HTTP_COOKIE"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        answered: list[Any] = []

        def start_response(status: str, response_headers: Any, *exc_info: Any) -> Any:
            answered.append((status, response_headers))
            return io.BytesIO().write

        answer = self.handler(environ, start_response)
        payload = b"".join(answer)
        answer.close()  # as a WSGI server does once it has sent it: what runs then is timed too
        status, response_headers = answered[0]
        for name, value in response_headers:
            if name.lower() == "set-cookie":
                jar: SimpleCookie = SimpleCookie()
                jar.load(value)
                for key, morsel in jar.items():
                    self.cookies[key] = morsel.value
        return status, payload


def _timed(
    app: InProcess, send: Callable[[], tuple[str, bytes]], profile: str
) -> tuple[float, float]:
    """Python's own microseconds per request and SQL's: the means of REQUESTS, after as many to
    warm up."""
    for _ in range(REQUESTS):
        send()
    if profile == "sql":
        from django.db import connection

        def shown(execute: Callable[..., Any], sql: Any, *args: Any) -> Any:
            start = time.perf_counter()
            try:
                return execute(sql, *args)
            finally:
                took = (time.perf_counter() - start) * 1000
                print(f"  {took:.2f} ms  {' '.join(str(sql).split())[:300]}")

        for _ in range(3):
            with connection.execute_wrapper(shown):
                send()
        profile = ""
    profiler = cProfile.Profile() if profile else None
    app.sql_seconds = 0.0
    start = time.perf_counter()
    if profiler:
        profiler.enable()
    for _ in range(REQUESTS):
        status, payload = send()
        if not status.startswith("200"):
            raise RuntimeError(f"answered {status}: {payload[:300]!r}")
    if profiler:
        profiler.disable()
        stats = pstats.Stats(profiler)
        stats.sort_stats(profile).print_stats(int(os.environ.get("BENCH_HOT_LINES", "25")))
    whole = time.perf_counter() - start
    return (whole - app.sql_seconds) / REQUESTS * 1e6, app.sql_seconds / REQUESTS * 1e6


def bench_hot() -> None:
    from tests.factories import UserFactory

    profile = os.environ.get("BENCH_HOT_PROFILE", "")
    user: Any = UserFactory(with_password=PASSWORD)
    name = user.username
    basic = "Basic " + b64encode(f"{name}:{PASSWORD}".encode()).decode()
    json_body = {"Content-Type": "application/json; charset=utf-8"}

    antennapod = InProcess({"User-Agent": "AntennaPod/3.8.0", "Accept-Encoding": "gzip"})
    antennapod.call("POST", f"/api/2/auth/{name}/login.json", Authorization=basic)
    feeds = [f"https://profile.example.com/{n}.xml" for n in range(50)]
    subscriptions = f"/api/2/subscriptions/{name}/phone.json"
    episodes = f"/api/2/episodes/{name}.json"
    _, answer = antennapod.call(
        "POST", subscriptions, json.dumps({"add": feeds, "remove": []}).encode(), **json_body
    )
    since = json.loads(answer)["timestamp"]
    played = iter(range(10**9))

    def play() -> bytes:
        n = next(played)
        return json.dumps(
            [
                {
                    "podcast": feeds[n % 50],
                    "episode": f"https://profile.example.com/{n}.mp3",
                    "device": "phone",
                    "action": "play",
                    "timestamp": "2026-11-29T10:00:00",
                    "started": 0,
                    "position": 60,
                    "total": 3600,
                }
            ]
        ).encode()

    kasts = InProcess({"User-Agent": "Kasts", "Authorization": basic})
    nextcloud = "/index.php/apps/gpoddersync"
    v1 = InProcess({"Authorization": f"Bearer {token_for(user)}"})
    _, answer = v1.call("GET", "/v1/subscriptions?per_page=1")
    guid = json.loads(answer)["subscriptions"][0]["guid"]
    hot: list[tuple[str, InProcess, Callable[[], tuple[str, bytes]]]] = [
        (
            "gpodder: subscriptions pull",
            antennapod,
            lambda: antennapod.call("GET", f"{subscriptions}?since={since}"),
        ),
        (
            "gpodder: subscriptions upload",
            antennapod,
            lambda: antennapod.call(
                "POST", subscriptions, b'{"add": [], "remove": []}', **json_body
            ),
        ),
        (
            "gpodder: episodes download",
            antennapod,
            lambda: antennapod.call("GET", f"{episodes}?since={int(time.time())}"),
        ),
        (
            "gpodder: episodes upload",
            antennapod,
            lambda: antennapod.call("POST", episodes, play(), **json_body),
        ),
        (
            "Nextcloud: subscriptions",
            kasts,
            lambda: kasts.call("GET", f"{nextcloud}/subscriptions?since={since}"),
        ),
        (
            "Nextcloud: subscription change",
            kasts,
            lambda: kasts.call(
                "POST",
                f"{nextcloud}/subscription_change/create",
                b'{"add": [], "remove": []}',
                **json_body,
            ),
        ),
        (
            "Nextcloud: episode actions",
            kasts,
            lambda: kasts.call("GET", f"{nextcloud}/episode_action?since={int(time.time())}"),
        ),
        (
            "Nextcloud: episode action create",
            kasts,
            lambda: kasts.call("POST", f"{nextcloud}/episode_action/create", play(), **json_body),
        ),
        ("/v1/: GET one", v1, lambda: v1.call("GET", f"/v1/subscriptions/{guid}")),
        ("/v1/: the list, 50", v1, lambda: v1.call("GET", "/v1/subscriptions?per_page=50")),
    ]
    print(f"Python time per hot request, in-process (the mean of {REQUESTS}; SQL apart)")
    for label, app, send in hot:
        if profile:
            print(f"\n{label}")
        python_us, sql_us = _timed(app, send, profile)
        row(
            f"Python time: {label}",
            f"{python_us / 1000:.2f} ms (SQL {sql_us / 1000:.2f} ms)",
            "at most 0.50 ms",
        )
    for app in (antennapod, kasts, v1):
        app.close()  # the areas after this one time nothing
