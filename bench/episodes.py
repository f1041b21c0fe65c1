"""Episode actions on the gpodder API: a first sync's uploads, downloads from a long history,
an app's incremental round, beside GET one; and the plays and histories other areas build
their accounts with."""

import re
import time
from typing import Any

from bench.harness import Client, GpodderSession, Gunicorn, percentile, row, token_for


def play(podcast: int, episode: int, position: int = 61) -> dict[str, Any]:
    """A play action as AntennaPod uploads it."""
    return {
        "podcast": f"https://episodes.example.com/{podcast}/feed.xml",
        "episode": f"https://episodes.example.com/{podcast}/{episode}.mp3",
        "action": "play",
        "timestamp": "2024-05-01T10:30:00",
        "started": 0,
        "position": position,
        "total": 3600,
        "device": "phone",
        "guid": f"episode-{podcast}-{episode}",
    }


def insert_history(user: Any, count: int) -> int:
    """`count` play actions of the user's device "phone", inserted directly: 10 a second (an
    upload each), spread over 30 days up to a minute ago. Answers the second of the last 10."""
    from datetime import UTC, datetime, timedelta

    from core.db import sql
    from episodes.models import EpisodeAction
    from gpodder.services import devices_touch
    from subscriptions import feeds

    podcasts = [f"https://episodes.example.com/{n}/feed.xml" for n in range(100)]
    keys = [feeds.feed_key_digest(url) for url in podcasts]
    device = devices_touch(user=user, device_ids={"phone"})["phone"].pk
    last = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=1)
    step = timedelta(days=30) / (count // 10)
    for start in range(0, count, 10_000):
        ns = range(start, min(count, start + 10_000))
        received = [(last - (count - 1 - n) // 10 * step).replace(microsecond=0) for n in ns]
        columns: dict[str, list[Any]] = {
            "device": [device] * len(ns),
            "podcast": [podcasts[n % 100] for n in ns],
            "podcast_key": [keys[n % 100] for n in ns],
            "episode": [f"https://episodes.example.com/{n % 100}/{n}.mp3" for n in ns],
            "action": ["play"] * len(ns),
            "timestamp": [second - timedelta(minutes=5) for second in received],
            "received": received,
            "guid": [f"episode-{n}" for n in ns],
            "started": [0] * len(ns),
            "position": [n % 3600 for n in ns],
            "total": [3600] * len(ns),
            "identity": [f"bench-{n}" for n in ns],
        }
        sql.insert(EpisodeAction, columns, same={"user": user.pk})
    return int(last.timestamp())


def bench_episodes(app: Gunicorn) -> None:
    """Episode actions on the gpodder API, as apps sync them on one kept-alive connection, one
    request at a time, on the session cookie: a first sync's uploads, downloads from a long
    history, and an app's incremental round; compared with GET one, timed the same way."""
    from datetime import UTC, datetime

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from episodes.models import EpisodeAction
    from episodes.selectors import actions_since
    from subscriptions import services
    from tests.factories import UserFactory

    def app_session() -> tuple[GpodderSession, str, Any]:
        """A new user's app, logged in: its session, its episodes path, the user."""
        user: Any = UserFactory(with_password="bench-password")
        session = GpodderSession(app.port, user.username, "bench-password")
        session.call("POST", f"/api/2/auth/{user.username}/login.json")
        return session, f"/api/2/episodes/{user.username}.json", user

    print("Episode actions")
    reader: Any = UserFactory()
    [sub] = services.subscription_add_many(
        user=reader, entries=[services.AddEntry("https://episodes.example.com/one.xml")]
    ).success
    client = Client(app.port, token_for(reader))
    get_one = [client.call("GET", f"/v1/subscriptions/{sub.guid}") for _ in range(300)]
    if any(status != 200 for status, _, _ in get_one):
        raise RuntimeError("GET one failed")
    get_one_ms = percentile([elapsed for _, _, elapsed in get_one[100:]], 0.5) * 1000
    row("GET /v1/subscriptions/{guid}, one request at a time", f"p50 {get_one_ms:.2f} ms")

    # An app's first sync: 5,000 plays, in AntennaPod's batches of 30 and gPodder's of 100.
    plays = [play(podcast, episode) for podcast in range(50) for episode in range(100)]
    upload_ms = {}
    for batch in (30, 100):
        session, path, user = app_session()
        took = [session.call("POST", path, plays[i : i + batch])[1] for i in range(0, 5000, batch)]
        stored = EpisodeAction.objects.filter(user=user).count()
        if stored != 5000:
            raise RuntimeError(f"the uploads of {batch} stored {stored} actions")
        upload_ms[batch] = percentile(took, 0.5) * 1000
        row(
            f"episode first sync: 5,000 plays in uploads of {batch}",
            f"{len(took) / sum(took):.0f} req/s ({5000 / sum(took):,.0f} actions/s), "
            f"p50 {upload_ms[batch]:.2f} ms",
        )
    row("episode upload of 30 vs GET one: p50 ratio", f"{upload_ms[30] / get_one_ms:.1f}", "<= 5")

    podcasts = [f"https://episodes.example.com/{n}/feed.xml" for n in range(100)]

    def with_history(count: int) -> tuple[GpodderSession, str, Any, int]:
        """A user with `count` actions; also the second of the last 10."""
        session, path, user = app_session()
        return session, path, user, insert_history(user, count)

    small, small_path, _, small_last = with_history(1_000)
    big, big_path, big_user, big_last = with_history(100_000)
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM ANALYZE {EpisodeAction._meta.db_table}")  # as autovacuum would
    for conn in (small.conn, big.conn):
        conn.close()  # idle past gunicorn's keep-alive: the next request connects anew

    def pages() -> tuple[float, int, set[str]]:
        """A download since=0, the answered timestamp the next since while an answer holds a
        whole page (1,000: downloads were paged so once; now one answer holds everything), 5
        answers at most: its time, answers and the episodes read."""
        since = 0
        answers: list[tuple[Any, float]] = []
        while len(answers) < 5 and (not answers or len(answers[-1][0]["actions"]) == 1000):
            answers.append(big.call("GET", f"{big_path}?since={since}"))
            since = answers[-1][0]["timestamp"]
        read = {action["episode"] for answer, _ in answers for action in answer["actions"]}
        return sum(took for _, took in answers), len(answers), read

    downloads = [pages() for _ in range(5)]
    total_ms = percentile([elapsed for elapsed, _, _ in downloads], 0.5) * 1000
    _, read_pages, read = downloads[0]
    row(
        "episode download since=0 of 100,000 (pages of 1,000 followed, 5 at most)",
        f"p50 {total_ms:.0f} ms for {read_pages} answer(s), {len(read):,} actions "
        f"({total_ms / read_pages:.1f} ms an answer; a page's last second is read again)",
    )

    # The two in turn on one connection: one worker (the kernel hashes each connection to one)
    # and the same moments of the host's load.
    small.conn.close()  # idle for a while: the next request connects anew
    big.conn.close()
    big.conn = small.conn
    times: dict[str, list[float]] = {small_path: [], big_path: []}
    for _ in range(200):
        for session, path, last in ((small, small_path, small_last), (big, big_path, big_last)):
            answer, elapsed = session.call("GET", f"{path}?since={last - 1}")
            if len(answer["actions"]) != 10:
                raise RuntimeError(f"a download since {last - 1} did not answer 10 actions")
            times[path].append(elapsed)
    small_ms, big_ms = (percentile(times[path][20:], 0.5) * 1000 for path in (small_path, big_path))
    row(
        "episode download of the last 10, of 1,000 and of 100,000",
        f"p50 {small_ms:.2f} and {big_ms:.2f} ms",
    )
    row(
        "episode download of the last 10: 100,000 vs 1,000, p50 ratio",
        f"{big_ms / small_ms:.2f}",
        "flat (about 1)",
    )

    # The plan of that download's query, as it runs: its parameters, bound on the server ($1,
    # $2), are the user and the since.
    with CaptureQueriesContext(connection) as captured:
        list(actions_since(user=big_user, since=big_last - 1))
    [page_query] = [q["sql"] for q in captured.captured_queries if "ORDER BY" in q["sql"]]
    since = datetime.fromtimestamp(big_last - 1, UTC)
    with connection.cursor() as cursor:
        cursor.execute(
            f"EXPLAIN (ANALYZE, BUFFERS) {re.sub(r'[$][0-9]+', '%s', page_query)}",
            [big_user.pk, since],
        )
        plan = [line for (line,) in cursor.fetchall()]
    print("  plan of the download of the last 10 of 100,000 (EXPLAIN (ANALYZE, BUFFERS)):")
    for line in plan:
        print(f"    {line}")
    buffers = next((line.strip() for line in plan if "Buffers:" in line), "no buffers line")
    uses = "episodeaction_received_idx" in "\n".join(plan)
    row(
        "episode download of the last 10 of 100,000: plan",
        f"{'uses' if uses else 'DOES NOT USE'} episodeaction_received_idx; {buffers}",
    )

    # An app's incremental round, a while after the last: pull subscription changes, upload a
    # play, pull episode actions, each since what the round before was answered.
    subscriptions = f"/api/2/subscriptions/{big_user.username}/phone.json"
    big.call("POST", subscriptions, {"add": podcasts, "remove": []})
    subscriptions_since = big.call("GET", f"{subscriptions}?since=0")[0]["timestamp"]
    actions_since = big.call("GET", f"{big_path}?since={big_last}")[0]["timestamp"]
    rounds, pulled = [], []
    for n in range(20):
        # Past the timestamp answered (a second before, less the clocks' skew), so each pull
        # holds this round's upload and the one before, not every round's.
        time.sleep(2)
        changes, pull_took = big.call("GET", f"{subscriptions}?since={subscriptions_since}")
        upload_took = big.call("POST", big_path, [play(0, 0, position=n)])[1]
        answer, download_took = big.call("GET", f"{big_path}?since={actions_since}")
        subscriptions_since, actions_since = changes["timestamp"], answer["timestamp"]
        rounds.append(
            (pull_took + upload_took + download_took, pull_took, upload_took, download_took)
        )
        pulled.append(len(answer["actions"]))
    each = [percentile([r[i] for r in rounds], 0.5) * 1000 for i in range(4)]
    row(
        "episode incremental round: pull subscriptions, upload a play, pull actions",
        f"p50 {each[0]:.2f} ms ({each[1]:.2f} + {each[2]:.2f} + {each[3]:.2f}; "
        f"{min(pulled)} to {max(pulled)} actions pulled)",
    )
    row("episode incremental round vs GET one: p50 ratio", f"{each[0] / get_one_ms:.1f}", "<= 3")
    for conn in (big.conn, client.conn):
        conn.close()
