"""The Nextcloud gPodder Sync API: its incremental round, Basic on every request, beside the
gpodder API's round on the cookie."""

import time
from typing import Any

from bench.episodes import play
from bench.harness import GpodderSession, Gunicorn, percentile, row


def bench_nextcloud(app: Gunicorn) -> None:
    """The Nextcloud paths' incremental round as AntennaPod's Nextcloud option makes it, Basic on
    every request and no cookie: pull subscription changes, upload a play, pull episode actions,
    each since what the round before was answered; beside the gpodder API's round (above)."""
    from tests.factories import UserFactory

    print("Nextcloud gPodder Sync API")
    user: Any = UserFactory(with_password="bench-password")
    app_conn = GpodderSession(app.port, user.username, "bench-password")
    base = "/index.php/apps/gpoddersync"
    podcasts = [f"https://nextcloud.example.com/{n}.xml" for n in range(100)]
    app_conn.call("POST", f"{base}/subscription_change/create", {"add": podcasts, "remove": []})
    for start in range(0, 300, 30):  # a first sync's plays, in AntennaPod's batches
        batch = [play(n % 100, n) for n in range(start, start + 30)]
        app_conn.call("POST", f"{base}/episode_action/create", batch, auth=True)
    subscriptions_since = app_conn.call("GET", f"{base}/subscriptions?since=0", auth=True)[0][
        "timestamp"
    ]
    actions_since = app_conn.call("GET", f"{base}/episode_action?since=0", auth=True)[0][
        "timestamp"
    ]
    gpodder = GpodderSession(app.port, user.username, "bench-password")
    gpodder.call("POST", f"/api/2/auth/{user.username}/login.json")
    gpodder_paths = (
        f"/api/2/subscriptions/{user.username}/phone.json",
        f"/api/2/episodes/{user.username}.json",
    )
    gpodder_since = [
        gpodder.call("GET", f"{path}?since=0")[0]["timestamp"] for path in gpodder_paths
    ]
    nextcloud, cookie = [], []
    for n in range(20):
        time.sleep(2)  # past the timestamps answered, as for the gpodder round above
        changes, pull_took = app_conn.call(
            "GET", f"{base}/subscriptions?since={subscriptions_since}", auth=True
        )
        upload_took = app_conn.call(
            "POST", f"{base}/episode_action/create", [play(0, 0, position=n)], auth=True
        )[1]
        answer, download_took = app_conn.call(
            "GET", f"{base}/episode_action?since={actions_since}", auth=True
        )
        subscriptions_since, actions_since = changes["timestamp"], answer["timestamp"]
        nextcloud.append(
            (pull_took + upload_took + download_took, pull_took, upload_took, download_took)
        )
        # The same round on the gpodder API, on its session cookie, by the same account.
        pulled, took_pull = gpodder.call("GET", f"{gpodder_paths[0]}?since={gpodder_since[0]}")
        took_upload = gpodder.call("POST", gpodder_paths[1], [play(1, 1, position=n)])[1]
        got, took_download = gpodder.call("GET", f"{gpodder_paths[1]}?since={gpodder_since[1]}")
        gpodder_since = [pulled["timestamp"], got["timestamp"]]
        cookie.append(
            (took_pull + took_upload + took_download, took_pull, took_upload, took_download)
        )
    for label, rounds in (
        ("nextcloud incremental round, Basic every time", nextcloud),
        ("gpodder incremental round beside it, cookie", cookie),
    ):
        each = [percentile([r[i] for r in rounds], 0.5) * 1000 for i in range(4)]
        row(
            f"{label}: pull subscriptions, upload a play, pull actions",
            f"p50 {each[0]:.2f} ms ({each[1]:.2f} + {each[2]:.2f} + {each[3]:.2f})",
        )
    app_conn.conn.close()
    gpodder.conn.close()
