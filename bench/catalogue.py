"""The episode catalogue (docs/web.md, "Episodes by name"): the history page, a podcast's page
and the export of an account with 100,000 actions, with the catalogue and without; a feed
check's catalogue work in-process; and the feeds as hosts write them."""

import http.client
import json
import os
import re
import statistics
import time
from typing import Any

from bench.harness import (
    SECONDS,
    Gunicorn,
    page_get,
    percentile,
    row,
    signed_in_cookie,
    timed_pages,
)

# The episode catalogue: 100,000 actions over 200 podcasts whose feeds have catalogues.
CATALOGUE_PODCASTS = 200
CATALOGUE_EPISODES = 500  # in each feed's catalogue
CATALOGUE_ACTIONS = 100_000  # CATALOGUE_ACTIONS // CATALOGUE_PODCASTS: every episode once
# The export is read for this long at most (a slow one is reported as such, and cancelled).
EXPORT_SECONDS = float(os.environ.get("BENCH_EXPORT_SECONDS", "60"))


def export_read(port: int, cookie: str, limit: float) -> tuple[float, bytes, bool]:
    """GET /data/everything.json, read for `limit` seconds at most: seconds to its last byte
    read, the bytes, whether that was the whole. An export cut short is cancelled in the
    database too, so that it does not weigh on the figures after it."""
    from django.db import connection as db

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=limit + 5)
    start = time.perf_counter()
    connection.request("GET", "/data/everything.json", headers=dict([cookie.split(": ", 1)]))
    response = connection.getresponse()
    if response.status != 200:
        raise RuntimeError(f"the export answered {response.status}")
    chunks, whole = [], False
    try:
        while time.perf_counter() - start < limit:
            chunk = response.read1(1 << 16)
            if not chunk:
                whole = True
                break
            chunks.append(chunk)
    except TimeoutError:
        pass
    took = time.perf_counter() - start
    connection.close()
    if not whole:
        with db.cursor() as cursor:
            for _ in range(300):
                cursor.execute(
                    "SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity WHERE datname ="
                    " current_database() AND state = 'active' AND pid <> pg_backend_pid()"
                    " AND backend_type = 'client backend'"
                )
                if not cursor.fetchone()[0]:
                    break
                time.sleep(0.1)
    return took, b"".join(chunks), whole


def catalogue_items(podcast: int) -> list[Any]:
    """The catalogue of podcast `podcast` as a check of its feed reads it (parsing.FeedItem),
    the newest first: CATALOGUE_EPISODES items, each with a guid and an enclosure."""
    import hashlib
    from datetime import UTC, datetime, timedelta

    from feedchecks.parsing import FeedItem
    from subscriptions import feeds

    newest = datetime(2026, 11, 1, 6, tzinfo=UTC)
    items = []
    for episode in range(CATALOGUE_EPISODES - 1, -1, -1):
        guid, url = catalogue_episode(podcast, episode)
        items.append(
            FeedItem(
                item_key=hashlib.sha256(f"guid:{guid}".encode()).hexdigest(),
                guid=guid,
                title=f"Show {podcast}, episode {episode}: the catalogue's title",
                url=url,
                url_key=feeds.url_key_digest(url),
                link=f"https://catalogue.example.com/{podcast}/episodes/{episode}",
                published=newest - timedelta(days=CATALOGUE_EPISODES - 1 - episode),
                duration=3000 + episode,
                image_url="",
            )
        )
    return items


def catalogue_episode(podcast: int, episode: int) -> tuple[str, str]:
    """An episode's guid and enclosure URL, in its feed and in the actions on it."""
    return (
        f"catalogue-{podcast}-episode-{episode}",
        f"https://media.catalogue.example.com/{podcast}/{episode}.mp3",
    )


def catalogue_rss(count: int, changed: int = 0) -> bytes:
    """A podcast feed of `count` items, the newest first, as hosts write them: a title, a guid,
    an enclosure, a pubDate, itunes:duration, a link and a short description; the newest
    `changed` items' titles changed (a correction the host made)."""
    from datetime import UTC, datetime, timedelta
    from email.utils import format_datetime

    newest = datetime(2026, 11, 1, 6, tzinfo=UTC)
    items = []
    for n in range(count):
        episode = count - 1 - n
        title = f"Episode {episode}: a conversation about podcasts"
        if n < changed:
            title += " (corrected)"
        seconds = 1800 + episode % 3600
        items.append(
            f"<item><title>{title}</title>"
            f'<guid isPermaLink="false">bench-feed-episode-{episode}</guid>'
            f"<link>https://feed.example.com/episodes/{episode}</link>"
            f'<enclosure url="https://media.feed.example.com/audio/{episode}.mp3" '
            f'length="{30_000_000 + episode}" type="audio/mpeg"/>'
            f"<pubDate>{format_datetime(newest - timedelta(days=n), usegmt=True)}</pubDate>"
            f"<itunes:duration>{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
            "</itunes:duration>"
            f"<description><![CDATA[<p>In episode {episode} we talk about the week's news."
            "</p>]]></description></item>"
        )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd">'
        "<channel><title>The Bench Show</title><link>https://feed.example.com/</link>"
        '<itunes:image href="https://feed.example.com/cover.jpg"/>'
        + "".join(items)
        + "</channel></rss>"
    ).encode()


def bench_catalogue(app: Gunicorn) -> None:
    """The episode catalogue (docs/web.md, "Episodes by name"): the history page, a podcast's
    page and the export of an account with 100,000 episode actions over 200 podcasts whose feeds
    have catalogues of 500 episodes, at one connection; the history page again with the
    catalogue empty; then a feed check's catalogue cost, in-process (bench_catalogue_store)."""
    from datetime import UTC, datetime, timedelta

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from core.db import sql
    from episodes.models import EpisodeAction
    from feedchecks.catalogue import catalogue_store
    from feedchecks.models import FeedCheck, FeedEpisode
    from gpodder.services import devices_touch
    from subscriptions import feeds
    from subscriptions.models import Subscription
    from subscriptions.services import AddEntry, subscription_add_many
    from tests.factories import UserFactory
    from web import selectors

    print("The episode catalogue")
    started = time.perf_counter()
    user: Any = UserFactory()
    urls = [f"https://catalogue.example.com/{p}/feed.xml" for p in range(CATALOGUE_PODCASTS)]
    keys = [feeds.feed_key_digest(url) for url in urls]
    now = datetime.now(UTC)
    # Checked a moment ago, so that no check the adds ask for would fetch them again.
    checks = FeedCheck.objects.bulk_create(
        FeedCheck(
            key_digest=key,
            url=url,
            title=f"Show {p}",
            claimed=now,
            checked=now,
            result=FeedCheck.Result.NOTHING,
        )
        for p, (key, url) in enumerate(zip(keys, urls, strict=True))
    )
    subscription_add_many(user=user, entries=[AddEntry(feed_url=url) for url in urls])

    def store_catalogues() -> float:
        start = time.perf_counter()
        for p, check in enumerate(checks):
            catalogue_store(feed_id=check.pk, items=catalogue_items(p), kept=1000)
        return time.perf_counter() - start

    stored_s = store_catalogues()
    # Action n is on episode n // 200 of podcast n % 200, the latest last; half (the even
    # episodes) carry the guid, the others only the enclosure URL they are matched by.
    device = devices_touch(user=user, device_ids={"phone"})["phone"].pk
    last = now.replace(microsecond=0) - timedelta(minutes=1)
    step = timedelta(days=60) / CATALOGUE_ACTIONS
    for start in range(0, CATALOGUE_ACTIONS, 10_000):
        ns = range(start, min(CATALOGUE_ACTIONS, start + 10_000))
        spots = [(n % CATALOGUE_PODCASTS, n // CATALOGUE_PODCASTS) for n in ns]
        sent = [catalogue_episode(p, e) for p, e in spots]
        received = [last - (CATALOGUE_ACTIONS - 1 - n) * step for n in ns]
        columns: dict[str, list[Any]] = {
            "device": [device] * len(ns),
            "podcast": [urls[p] for p, _ in spots],
            "podcast_key": [keys[p] for p, _ in spots],
            "episode": [url for _, url in sent],
            "episode_key": [feeds.url_key_digest(url) for _, url in sent],
            "action": ["play"] * len(ns),
            "timestamp": [second - timedelta(minutes=5) for second in received],
            "received": [second.replace(microsecond=0) for second in received],
            "guid": [
                guid if e % 2 == 0 else "" for (guid, _), (_, e) in zip(sent, spots, strict=True)
            ],
            "started": [0] * len(ns),
            "position": [n % 3000 for n in ns],
            "total": [3000] * len(ns),
            "identity": [f"catalogue-{n}" for n in ns],
        }
        sql.insert(EpisodeAction, columns, same={"user": user.pk})
    tables = (EpisodeAction, FeedEpisode, FeedCheck)
    with connection.cursor() as cursor:
        for model in tables:  # as autovacuum would have, by the time it matters
            cursor.execute(f"VACUUM ANALYZE {model._meta.db_table}")
    row(
        "catalogue bench data: 100,000 actions, 200 feeds of 500 episodes",
        f"loaded in {time.perf_counter() - started:.1f} s "
        f"(the 200 catalogues stored in {stored_s:.1f} s)",
    )

    # Every one of the page's actions is named from the catalogue, by guid or by URL: the
    # latest of each of the 10 latest episodes of the 10 podcasts played last.
    first = selectors.history_page(user=user, page=1)
    shown = [action for podcast in first.object_list for action in podcast.actions]
    named = [action for action in shown if getattr(action, "catalogued", None) is not None]
    by_guid = sum(1 for action in named if action.guid)
    wanted = selectors.HISTORY_PODCASTS_PER_PAGE * selectors.HISTORY_EPISODES_PER_PODCAST
    if len(shown) != wanted or len(named) != len(shown):
        raise RuntimeError(f"the history shows {len(shown)} actions, {len(named)} named")
    cookie = signed_in_cookie(user)
    status, body, _ = page_get(app.port, "/history/", cookie)
    if status != 200 or b"the catalogue&#x27;s title" not in body:
        raise RuntimeError(f"the history page answered {status}, without the catalogue's titles")
    podcast_guid = Subscription.objects.get(user=user, feed_url=urls[0]).guid
    podcast_path = f"/podcasts/{podcast_guid}/"
    status, body, _ = page_get(app.port, podcast_path, cookie)
    if status != 200 or b"Show 0, episode 499" not in body:
        raise RuntimeError(f"the podcast page answered {status}, without its newest episode")

    def p50(path: str) -> float:
        took = timed_pages(app.port, path, cookie, seconds=max(3, SECONDS // 2))
        return percentile(took, 0.5)

    def export() -> str:
        """The whole export, read to its end or for EXPORT_SECONDS: what it took and held."""
        took, body, whole = export_read(app.port, cookie, EXPORT_SECONDS)
        if not whole:
            read = body.count(b'"action":')
            rate = read / took if read else 0.0
            end = f"about {CATALOGUE_ACTIONS / rate:,.0f} s for all" if rate else "none yet"
            return (
                f"NOT FINISHED in {took:.0f} s: {len(body) / 1e6:.1f} MB, {read:,} of "
                f"{CATALOGUE_ACTIONS:,} actions read ({end})"
            )
        actions = json.loads(body)["episode_actions"]
        if len(actions) != CATALOGUE_ACTIONS:
            raise RuntimeError(f"the export holds {len(actions)} actions")
        named = sum(1 for action in actions if action.get("episode_title"))
        return f"{took:.2f} s, {len(body) / 1e6:.1f} MB, {named:,} actions with an episode_title"

    def history_plan() -> list[str]:
        """EXPLAIN (ANALYZE, BUFFERS) of the history page's query of its podcasts' episodes,
        the latest action of each matched."""
        with CaptureQueriesContext(connection) as captured:
            selectors.history_page(user=user, page=1)
        [query] = [q["sql"] for q in captured.captured_queries if "ROW_NUMBER()" in q["sql"]]
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {query}")
            return [line for (line,) in cursor.fetchall()]

    def executed(plan: list[str]) -> str:
        line = next((line for line in plan if line.startswith("Execution Time")), "? ms")
        return line.split(": ")[-1]

    def catalogue_reads(plan: list[str]) -> str:
        """How the plan reads the catalogue: each scan of FeedEpisode, its loops, and the most
        rows a scan read and threw away (Rows Removed by Filter)."""
        scans = []
        for n, line in enumerate(plan):
            if f" on {FeedEpisode._meta.db_table} " in line:
                what = re.sub(r"\s*\(cost.*", "", line.split("->")[-1].strip())
                loops = re.search(r"loops=(\d+)", line)
                removed = next(
                    (
                        int(found[1])
                        for later in plan[n + 1 : n + 6]
                        if (found := re.search(r"Rows Removed by Filter: (\d+)", later))
                    ),
                    0,
                )
                scans.append(
                    f"{what.replace(f' on {FeedEpisode._meta.db_table}', '')}"
                    f" x {loops[1] if loops else '?'} ({removed:,} rows thrown away a loop)"
                )
        return "; ".join(scans) or "no scan of the catalogue"

    page_get(app.port, "/history/", cookie)  # warm up: the worker's connection, the caches
    with_catalogue = p50("/history/")
    podcast_ms = p50(podcast_path)
    exported = export()
    plan = history_plan()
    print("  plan of the history page's episodes, matched (EXPLAIN (ANALYZE, BUFFERS)):")
    for line in plan:
        print(f"    {line}")

    # The catalogue empty: the same page, every action's match looked for and none found.
    ids = [check.pk for check in checks]
    FeedEpisode.objects.filter(feed_id__in=ids).delete()
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM ANALYZE {FeedEpisode._meta.db_table}")
    status, body, _ = page_get(app.port, "/history/", cookie)
    if status != 200 or b"the catalogue&#x27;s title" in body:
        raise RuntimeError(f"the history page answered {status}, or with titles still")
    empty = p50("/history/")
    empty_plan = history_plan()
    exported_empty = export()

    # The catalogue stored again, and the page measured again: the host's load moves.
    restored_s = store_catalogues()
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM ANALYZE {FeedEpisode._meta.db_table}")
    again = p50("/history/")

    row(
        f"history page (10 podcasts of 200, their 5,000 of 100,000 actions matched, the "
        f"{len(shown)} shown {by_guid} named by guid, the rest by URL), "
        "one connection: with the catalogue, empty, with it again",
        f"p50 {with_catalogue:.1f}, {empty:.1f} and {again:.1f} ms",
    )
    row(
        "history page, with the catalogue vs empty: p50 ratio",
        f"{with_catalogue / empty:.2f} / {again / empty:.2f}",
        "<= 1.5",
    )
    row(
        "history page's query of its podcasts' 5,000 actions (EXPLAIN ANALYZE), with the "
        "catalogue vs empty",
        f"{executed(plan)} vs {executed(empty_plan)}",
    )
    row("history page's query: the catalogue read by", catalogue_reads(plan))
    row(
        "podcast page (500 actions on it, a page of 20 of them, 20 newest episodes), "
        "one connection",
        f"p50 {podcast_ms:.1f} ms",
    )
    row("everything.json export of 100,000 actions, with the catalogue", exported)
    row("everything.json export of 100,000 actions, the catalogue empty", exported_empty)
    row("catalogue stored again, 200 feeds of 500", f"{restored_s:.1f} s")
    bench_catalogue_store()


def bench_catalogue_store() -> None:
    """A feed check's catalogue work, in-process on the bench's PostgreSQL: parsing a feed's
    1,000 items, and catalogue_store's first store, a store of the same items again and one
    with 10 changed, each over 5 feeds (the median printed) with its SQL statements."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from feedchecks.catalogue import catalogue_store
    from feedchecks.models import FeedCheck
    from feedchecks.parsing import feed_identity
    from subscriptions import feeds

    def parsed(data: bytes, kept: int, times: int) -> tuple[float, Any]:
        took = []
        for _ in range(times):
            start = time.perf_counter()
            identity = feed_identity(data, episodes_kept=kept)
            took.append(time.perf_counter() - start)
        return statistics.median(took) * 1000, identity

    feed = catalogue_rss(1000)
    parse_ms, identity = parsed(feed, 1000, 5)
    if len(identity.episodes) != 1000:
        raise RuntimeError(f"the feed's parse kept {len(identity.episodes)} items, not 1,000")
    items = identity.episodes
    corrected = [parsed(catalogue_rss(1000, changed=10 * (k + 1)), 1000, 1)[1] for k in range(5)]
    big = catalogue_rss(10_000)
    big_ms, big_identity = parsed(big, 1000, 3)
    if len(big_identity.episodes) != 1000:
        raise RuntimeError(f"the big feed's parse kept {len(big_identity.episodes)} items")

    timed: dict[str, list[tuple[float, int, tuple[int, int]]]] = {
        "first": [],
        "same": [],
        "changed": [],
    }
    for k in range(5):
        url = f"https://catalogue-store.example.com/{k}/feed.xml"
        check = FeedCheck.objects.create(key_digest=feeds.feed_key_digest(url), url=url)
        # The k-th feed's change is 10 more titles than the feed before it had changed.
        changed = corrected[k].episodes
        base = items if k == 0 else corrected[k - 1].episodes
        for label, stored in (("first", base), ("same", base), ("changed", changed)):
            with CaptureQueriesContext(connection) as captured:
                start = time.perf_counter()
                result = catalogue_store(feed_id=check.pk, items=stored, kept=1000)
                took = time.perf_counter() - start
            timed[label].append((took * 1000, len(captured.captured_queries), result))
    expected = {"first": (1000, 0), "same": (0, 0), "changed": (10, 0)}
    for label, runs in timed.items():
        if any(result != expected[label] for _, _, result in runs):
            raise RuntimeError(f"the {label} stores wrote and pruned {[r for _, _, r in runs]}")

    def median_ms(label: str) -> str:
        runs = timed[label]
        statements = sorted({count for _, count, _ in runs})
        return (
            f"{statistics.median(ms for ms, _, _ in runs):.1f} ms, "
            f"{'/'.join(map(str, statements))} statement(s), {runs[0][2][0]:,} rows written"
        )

    print("A feed check's catalogue (in-process, on the bench's PostgreSQL)")
    row(
        f"parse a 1,000-item feed ({len(feed) / 1000:.0f} KB), feed_identity(episodes_kept=1000)",
        f"median {parse_ms:.0f} ms",
    )
    row(
        f"parse a 10,000-item feed ({len(big) / 1e6:.1f} MB), 1,000 kept",
        f"median {big_ms:.0f} ms",
    )
    row("catalogue_store, first check: 1,000 new items", median_ms("first"), "1 statement")
    row("catalogue_store, the same 1,000 items again", median_ms("same"), "1 statement, 0 rows")
    row("catalogue_store, 10 of 1,000 items changed", median_ms("changed"), "1 statement")
