"""The gpodder.net API: an app's first sync and its incremental pulls, on the session cookie
and with Basic on every request."""

import time
from typing import Any

from bench.harness import SECONDS, GpodderSession, Gunicorn, Load, percentile, row, wrk


def bench_gpodder(app: Gunicorn) -> None:
    """An app's first sync and its incremental pulls on the gpodder API, as AntennaPod and Kasts
    make them: Basic, then the session cookie (or Basic on every request)."""
    from tests.factories import UserFactory

    user: Any = UserFactory(with_password="bench-password")
    name = user.username
    session = GpodderSession(app.port, name, "bench-password")
    call = session.call

    print("gpodder API")
    call("POST", f"/api/2/auth/{name}/login.json", auth=True)
    uploads, pulls = [], []
    for first_sync in range(5):  # a new device of a new feed list each time
        urls = [f"https://gpodder.example.com/{first_sync}/{i}.xml" for i in range(1000)]
        path = f"/api/2/subscriptions/{name}/device{first_sync}.json"
        _, elapsed = call("POST", path, {"add": urls, "remove": []})
        uploads.append(elapsed)
        changes, elapsed = call("GET", f"{path}?since=0")
        pulls.append(elapsed)
    row("gpodder first sync: upload of 1,000 URLs", f"p50 {percentile(uploads, 0.5) * 1000:.1f} ms")
    row(
        "gpodder first sync: pull since=0",
        f"p50 {percentile(pulls, 0.5) * 1000:.1f} ms ({len(changes['add']):,} URLs)",
    )
    device = f"/api/2/subscriptions/{name}/device0.json"
    # An app's next round, a while later: its timestamp now lies after the first sync's changes.
    time.sleep(4)
    since = call("GET", f"{device}?since={changes['timestamp']}")[0]["timestamp"]
    incremental = [call("GET", f"{device}?since={since}")[1] for _ in range(200)]
    row("gpodder incremental pull, cookie", f"p50 {percentile(incremental, 0.5) * 1000:.2f} ms")
    session.conn.close()
    path = f"{device}?since={since}"

    def pulled(*headers: str) -> Load:
        load = wrk(app.port, path, "", seconds=SECONDS // 2, connections=1, headers=headers)
        if load.errors:
            raise RuntimeError(f"{load.errors} pulls failed with {headers}")
        return load

    by_cookie = pulled(f"Cookie: {session.cookie}")
    # Kasts: Basic on every request, with the cookie its Qt cookie jar keeps.
    by_basic = pulled(f"Authorization: {session.basic}", f"Cookie: {session.cookie}")
    # A client that keeps no cookie: every request logs in anew (a session written each time).
    cookieless = pulled(f"Authorization: {session.basic}")
    row(
        "gpodder incremental pull at one connection: cookie, Basic every time, Basic and no cookie",
        f"p50 {by_cookie.p50_ms:.2f}, {by_basic.p50_ms:.2f} and {cookieless.p50_ms:.2f} ms",
    )
    row(
        "gpodder pull, Basic every time vs cookie: p50 ratio",
        f"{by_basic.p50_ms / by_cookie.p50_ms:.2f}",
        "<= 1.5",
    )
