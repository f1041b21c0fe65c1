"""Every page of the account holders' site at two sizes of the same account: 1,000 episode actions
and 100,000 (`BENCH_ONLY=pages make bench`, also part of the whole run after the pages' figures).

Both accounts have the same 100 podcasts, the device "phone" that uploaded every action, an app
password and one deletion; only the number of actions differs. Each page is read one request at
a time on one kept-alive connection, signed in on the pages (bench/harness.py's `timed_pages`),
after one untimed first read, alternating small and big so that the host's load falls on both
alike. The target: each page's p50 at 100,000 within 1.5x of the same page at 1,000.
"""

from collections.abc import Callable
from typing import Any

SMALL, BIG = 1_000, 100_000
TARGET = 1.5
ROUNDS = 3  # of each page at each size, alternating; their p50s are pooled

# Each page as a person reaches it: (its name, its path for an account's podcast guid).
PAGES: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("podcasts", lambda guid: "/podcasts/"),
    ("podcasts, all of them", lambda guid: "/podcasts/?status=all"),
    ("a podcast", lambda guid: f"/podcasts/{guid}/"),
    ("a podcast's delete confirmation", lambda guid: f"/podcasts/{guid}/delete/"),
    ("devices", lambda guid: "/devices/"),
    ("a device", lambda guid: "/devices/phone/"),
    ("a device's removal confirmation", lambda guid: "/devices/phone/remove/"),
    ("history", lambda guid: "/history/"),
    ("your data", lambda guid: "/data/"),
    ("account", lambda guid: "/account/"),
    ("connect an app", lambda guid: "/connect/"),
)


def account(size: int, insert_history: Callable[[Any, int], int]) -> tuple[Any, str]:
    """An account of `size` play actions over 100 podcasts it follows: the user, and the guid of
    its first podcast (which holds a hundredth of the actions)."""
    from accounts.services import app_password_create
    from deletions.services import deletion_request
    from subscriptions.models import Subscription
    from subscriptions.services import AddEntry, subscription_add_many
    from tests.factories import UserFactory

    user: Any = UserFactory()
    podcasts = [f"https://episodes.example.com/{n}/feed.xml" for n in range(100)]
    subscription_add_many(user=user, entries=[AddEntry(feed_url=url) for url in podcasts])
    subscription_add_many(
        user=user, entries=[AddEntry(feed_url="https://gone.example.com/feed.xml")]
    )
    gone = Subscription.objects.get(user=user, feed_url="https://gone.example.com/feed.xml")
    deletion_request(user=user, guid=gone.guid)
    insert_history(user, size)
    app_password_create(user=user, name="AntennaPod")
    return user, str(Subscription.objects.get(user=user, feed_url=podcasts[0]).guid)


def bench_pages(
    port: int,
    row: Callable[..., None],
    *,
    insert_history: Callable[[Any, int], int],
    cookie_for: Callable[[Any], str],
    timed: Callable[[int, str, str, float], list[float]],
    percentile: Callable[[list[float], float], float],
    seconds: float,
) -> None:
    from django.db import connection

    print("every page at 1,000 and at 100,000 episode actions")
    sizes = {size: account(size, insert_history) for size in (SMALL, BIG)}
    cookies = {size: cookie_for(user) for size, (user, _) in sizes.items()}
    with connection.cursor() as cursor:  # as autovacuum would have, by the time it matters
        cursor.execute("VACUUM ANALYZE episodes_episodeaction")
    for name, path_for in PAGES:
        took: dict[int, list[float]] = {SMALL: [], BIG: []}
        for _ in range(ROUNDS):
            for size, (_, guid) in sizes.items():
                path = path_for(guid)
                timed(port, path, cookies[size], 0.1)  # untimed: the first read of its rows
                took[size] += timed(port, path, cookies[size], seconds / ROUNDS)
        small, big = (percentile(took[size], 0.5) for size in (SMALL, BIG))
        ratio = big / small
        row(
            f"page {name}: p50 at 1,000 / at 100,000 actions",
            f"{small:.1f} / {big:.1f} ms: **{ratio:.2f}**",
            f"<= {TARGET}: {'met' if ratio <= TARGET else 'NOT MET'}",
        )
