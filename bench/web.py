"""The account holders' pages: the podcasts page of 5,000 subscriptions (BENCH_ONLY=web), and
every page at two sizes of an account (BENCH_ONLY=pages, bench/pages.py)."""

import http.client
from typing import Any

from bench import pages
from bench.episodes import insert_history
from bench.harness import (
    SECONDS,
    Gunicorn,
    percentile,
    row,
    signed_in_cookie,
    timed_pages,
    wrk,
)


def bench_web(app: Gunicorn) -> None:
    """The account holders' podcasts page at 5,000 subscriptions, half of them titled by a feed
    check: a page of 50 by title, a later page, a search, at one connection."""
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    from accounts.sessions import BROWSER, SURFACE_SESSION_KEY
    from feedchecks.models import FeedCheck
    from subscriptions import feeds
    from subscriptions.services import AddEntry, subscription_add_many
    from tests.factories import UserFactory

    user: Any = UserFactory()
    urls = [f"https://web.example.com/{n}.xml" for n in range(5000)]
    for start in range(0, len(urls), 500):
        subscription_add_many(
            user=user, entries=[AddEntry(feed_url=url) for url in urls[start : start + 500]]
        )
    FeedCheck.objects.bulk_create(
        FeedCheck(key_digest=feeds.feed_key_digest(url), url=url, title=f"Show {n}")
        for n, url in enumerate(urls)
        if n % 2 == 0
    )
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session[SURFACE_SESSION_KEY] = BROWSER  # signed in on the pages (accounts.sessions)
    session.create()
    cookie = f"Cookie: {settings.SESSION_COOKIE_NAME}={session.session_key}"
    connection = http.client.HTTPConnection("127.0.0.1", app.port, timeout=30)
    connection.request("GET", "/podcasts/", headers=dict([cookie.split(": ", 1)]))
    shown = connection.getresponse()
    if shown.status != 200 or b"5000 podcasts" not in shown.read():
        raise RuntimeError(f"the podcasts page answered {shown.status}, not the 5,000 podcasts")
    print("account holders' pages")
    for label, path in (
        ("first page", "/podcasts/"),
        ("page 50", "/podcasts/?page=50"),
        ("a search", "/podcasts/?q=show+12"),
    ):
        load = wrk(app.port, path, "", seconds=SECONDS // 3, connections=1, headers=(cookie,))
        if load.errors:
            raise RuntimeError(f"{load.errors} requests of {path} failed")
        row(
            f"podcasts page of 5,000 subscriptions, {label}, one connection",
            f"p50 {load.p50_ms:.1f} ms",
        )


def bench_pages(app: Gunicorn) -> None:
    pages.bench_pages(
        app.port,
        row,
        insert_history=insert_history,
        cookie_for=signed_in_cookie,
        timed=timed_pages,
        percentile=percentile,
        seconds=max(3, SECONDS // 2),
    )
