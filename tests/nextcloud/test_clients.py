"""Replays of the apps that speak the Nextcloud gPodder Sync API, written from their code
(AntennaPod: NextcloudSyncService, SyncService.syncSubscriptions / syncEpisodeActions,
EpisodeAction, ResponseMapper; Kasts: src/sync/gpodder/gpodder.cpp, syncjob.cpp), and one
account across the three APIs.

AntennaPod: Basic (OkHttp's Credentials.basic, Latin-1) on every request to
`/index.php/apps/gpoddersync/...`; subscriptions: GET since its last timestamp, then its queued
changes uploaded, keeping the GET's timestamp, or its own clock after an upload. Episode
actions: one GET since its last timestamp, then its queued actions uploaded 30 at a time (on
its first sync, a play action for every played episode), without `device`, with `guid` when it
has one; then it keeps its OWN CLOCK as its next `since` whenever it uploaded, else the GET's
timestamp. A failed request fails the whole sync, and the next one sends everything again.

Kasts: Basic (UTF-8) on every request, GET subscriptions since=0 as its login check; stores
every answered timestamp plus 1; uploads compact JSON, 30 at a time, `device` and `guid`
always present (empty when unknown), times as Qt's ISO date with the `Z` cut off; it reads
`update_urls` from a subscription upload.
"""

import base64
import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from episodes.models import EpisodeAction
from gpodder.models import Device
from subscriptions.models import Subscription
from tests.helpers import client_for
from tests.nextcloud.helpers import APP, app_password, body

FEED = "https://feeds.example.com/show.xml"
OTHER_FEED = "https://other.example.com/feed.rss"


def episode(n: int) -> str:
    return f"https://cdn.example.com/show/{n}.mp3"


class AntennaPod:
    BATCH = 30

    def __init__(self, username: str, password: str):
        self.http = APIClient()
        token = base64.b64encode(f"{username}:{password}".encode("latin-1")).decode()
        self.http.credentials(HTTP_AUTHORIZATION=f"Basic {token}", HTTP_ACCEPT="application/json")
        self.last_subscription_sync = 0
        self.last_episode_sync = 0
        self.local: set[str] = set()

    @staticmethod
    def own_clock() -> int:
        return int(time.time())  # System.currentTimeMillis() / 1000

    def request(self, method: str, path: str, data: Any = None, **params: Any) -> Any:
        if method == "GET":
            response = self.http.get(f"{APP}/{path}", params)
        else:
            response = self.http.post(
                f"{APP}/{path}", data=json.dumps(data), content_type="application/json"
            )
        if response.status_code != 200:  # performRequest: anything else throws
            raise OSError(f"Response code: {response.status_code} {response.content[:200]!r}")
        return body(response)

    def sync_subscriptions(self, added: list[str], removed: list[str]) -> None:
        changes = self.request("GET", "subscriptions", since=self.last_subscription_sync)
        new_timestamp = int(changes["timestamp"])
        for url in changes["add"]:
            self.local.add(url)
        for url in changes["remove"]:
            self.local.discard(url)
        if added or removed:
            self.request("POST", "subscription_change/create", {"add": added, "remove": removed})
            new_timestamp = self.own_clock()
        self.local |= set(added)
        self.local -= set(removed)
        self.last_subscription_sync = new_timestamp

    def sync_episodes(
        self, queued: list[dict[str, Any]], between_batches: Any = None, fail_after: int = -1
    ) -> list[dict[str, Any]]:
        answer = self.request("GET", "episode_action", since=self.last_episode_sync)
        new_timestamp = int(answer["timestamp"])
        remote = [a for a in answer["actions"] if a.get("podcast") and a.get("episode")]
        for a in remote:  # SimpleDateFormat("yyyy-MM-dd'T'HH:mm:ss") in UTC
            datetime.strptime(a["timestamp"], "%Y-%m-%dT%H:%M:%S")
        if queued:
            for number, start in enumerate(range(0, len(queued), self.BATCH)):
                self.request("POST", "episode_action/create", queued[start : start + self.BATCH])
                if number == fail_after:
                    raise OSError("the connection dropped")  # after the server stored it
                if between_batches is not None:
                    between_batches(number)
            new_timestamp = self.own_clock()
        self.last_episode_sync = new_timestamp
        return remote


def antennapod_play(n: int, position: int = 1800) -> dict[str, Any]:
    """EpisodeAction.writeToJsonObject: no device; guid when known; UTC with no zone."""
    return {
        "podcast": FEED,
        "episode": episode(n),
        "guid": f"urn:show:{n}",
        "action": "PLAY",
        "timestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S"),
        "started": position,
        "position": position,
        "total": position,
    }


class Kasts:
    BATCH = 30

    def __init__(self, username: str, password: str, device: str, now: Any = time.time):
        self.now = now  # its clock
        self.http = APIClient()
        token = base64.b64encode(f"{username}:{password}".encode()).decode()
        self.http.credentials(HTTP_AUTHORIZATION=f"Basic {token}")
        self.device = device
        self.subscription_since = 0
        self.episode_since = 0

    def store(self, timestamp: int) -> int:
        return timestamp + 1 if timestamp > 1 else 0  # SyncJob::updateDBTimestamp

    def login(self) -> bool:
        return self.http.get(f"{APP}/subscriptions?since=0").status_code == 200

    def sync_subscriptions(self, add: list[str], remove: list[str]) -> dict[str, Any]:
        response = self.http.get(f"{APP}/subscriptions?since={self.subscription_since}")
        assert response.status_code == 200
        changes = body(response)
        self.subscription_since = self.store(changes["timestamp"])
        if add or remove:
            posted = self.http.post(
                f"{APP}/subscription_change/create",
                data=json.dumps({"add": add, "remove": remove}, separators=(",", ":")),
                content_type="application/x-www-form-urlencoded",
            )
            assert posted.status_code == 200
            reply = body(posted)
            assert isinstance(reply["update_urls"], list)
            self.subscription_since = self.store(reply["timestamp"])
        return changes

    def sync_episodes(self, local: list[dict[str, Any]]) -> list[dict[str, Any]]:
        remote: list[dict[str, Any]] = []
        while True:
            response = self.http.get(f"{APP}/episode_action?since={self.episode_since}")
            assert response.status_code == 200
            answer = body(response)
            for a in answer["actions"]:  # QDateTime::fromString(..., Qt::ISODate), no suffix
                assert not a["timestamp"].endswith(("Z", "+00:00"))
                datetime.strptime(a["timestamp"], "%Y-%m-%dT%H:%M:%S")
            remote += answer["actions"]
            self.episode_since = self.store(answer["timestamp"])
            if answer["timestamp"] >= self.now() - 10:
                break
        for start in range(0, len(local), self.BATCH):
            batch = [
                {
                    "podcast": a["podcast"],
                    "episode": a["episode"],
                    "guid": a.get("guid", ""),
                    "device": self.device,
                    "action": a["action"],
                    "timestamp": a["when"].strftime("%Y-%m-%dT%H:%M:%SZ")[:-1],  # Z chopped
                    **{k: a[k] for k in ("started", "position", "total") if k in a},
                }
                for a in local[start : start + self.BATCH]
            ]
            posted = self.http.post(
                f"{APP}/episode_action/create",
                data=json.dumps(batch, separators=(",", ":")),
                content_type="application/x-www-form-urlencoded",
            )
            assert posted.status_code == 200, posted.content
            self.episode_since = self.store(body(posted)["timestamp"])
        return remote


FIRST_SYNC_PLAYS = 5000  # as the field sees it: 167 batches of 30


def test_antennapod_first_sync_then_incremental_rounds_miss_nothing(alice: Any) -> None:
    _, secret = app_password(alice, "AntennaPod")
    phone = AntennaPod("alice", secret)
    _, kasts_secret = app_password(alice, "Kasts")
    laptop = Kasts("alice", kasts_secret, device="kasts-laptop")
    assert laptop.login()
    laptop.sync_subscriptions([OTHER_FEED], [])

    # First sync: subscriptions since 0, its whole list uploaded.
    phone.sync_subscriptions([FEED], [])
    assert phone.local == {FEED, OTHER_FEED}
    assert Subscription.objects.filter(user=alice, is_subscribed=True).count() == 2

    # Its first episode sync: every played episode, in batches of 30; one fails half-way.
    plays = [antennapod_play(n) for n in range(FIRST_SYNC_PLAYS)]
    with pytest.raises(OSError, match="dropped"):
        phone.sync_episodes(plays, fail_after=4)
    assert phone.last_episode_sync == 0  # nothing kept: the next sync sends everything again
    assert EpisodeAction.objects.count() == 5 * 30

    # Sent again, with another device's play uploaded between two of its batches: the window
    # its own clock would leave.
    def kasts_plays(number: int) -> None:
        if number == 3:
            when = datetime.now(UTC)
            laptop.sync_episodes(
                [
                    {
                        "podcast": OTHER_FEED,
                        "episode": "https://o.example/1.mp3",
                        "action": "play",
                        "when": when,
                        "started": 0,
                        "position": 99,
                        "total": 600,
                    }
                ]
            )

    phone.sync_episodes(plays, between_batches=kasts_plays)
    assert EpisodeAction.objects.filter(device__device_id="AntennaPod").count() == FIRST_SYNC_PLAYS
    assert EpisodeAction.objects.count() == FIRST_SYNC_PLAYS + 1
    kasts_action = EpisodeAction.objects.get(device__device_id="kasts-laptop")
    # Its `since` alone would skip the other device's play for ever.
    assert kasts_action.received.timestamp() <= phone.last_episode_sync

    # The next round: the other device's play arrives.
    remote = phone.sync_episodes([])
    assert "https://o.example/1.mp3" in {a["episode"] for a in remote}
    played = next(a for a in remote if a["episode"] == "https://o.example/1.mp3")
    assert (played["action"], played["position"], played["total"]) == ("play", 99, 600)

    # Incremental rounds keeping its own clock: each side sees the other's new actions.
    phone.sync_episodes([antennapod_play(1000, position=42)])
    seen = laptop.sync_episodes([])
    assert any(a["episode"] == episode(1000) and a["position"] == 42 for a in seen)
    laptop.sync_episodes(
        [{"podcast": FEED, "episode": episode(7), "action": "delete", "when": datetime.now(UTC)}]
    )
    remote = phone.sync_episodes([antennapod_play(1001)])
    remote += phone.sync_episodes([])
    assert any(a["episode"] == episode(7) and a["action"] == "delete" for a in remote)
    # Nothing was stored twice, whatever was sent again.
    assert EpisodeAction.objects.count() == FIRST_SYNC_PLAYS + 4


def test_antennapod_subscription_rounds_keep_its_own_clock(alice: Any) -> None:
    _, secret = app_password(alice, "AntennaPod")
    phone = AntennaPod("alice", secret)
    phone.sync_subscriptions([FEED, OTHER_FEED], [])
    phone.sync_subscriptions([], [OTHER_FEED])
    assert not Subscription.objects.get(user=alice, feed_url=OTHER_FEED).is_subscribed
    # A second phone's first sync does not delete what it holds: remove is empty at 0.
    tablet = AntennaPod("alice", secret)
    tablet.local = {OTHER_FEED}
    tablet.sync_subscriptions([], [])
    assert tablet.local == {FEED, OTHER_FEED}


def test_kasts_replay(alice: Any, clock: Any) -> None:
    clock.now = datetime.now(UTC)
    _, secret = app_password(alice, "Kasts")
    kasts = Kasts("alice", secret, device="kasts-desktop", now=lambda: clock.now.timestamp())
    assert kasts.login()
    assert not Kasts("alice", "wrong", device="x").login()
    kasts.sync_subscriptions([FEED, "not a feed"], [])
    when = datetime(2024, 5, 1, 10, 30, tzinfo=UTC)
    local = [
        {
            "podcast": FEED,
            "episode": episode(n),
            "action": "play",
            "when": when + timedelta(minutes=n),
            "started": 0,
            "position": n,
            "total": 100,
        }
        for n in range(45)
    ] + [
        {
            "podcast": FEED,
            "episode": episode(99),
            "action": "download",
            "when": when,
            "guid": "urn:99",
        }
    ]
    kasts.sync_episodes(local)
    stored = EpisodeAction.objects.filter(user=alice)
    assert stored.count() == 46
    assert set(stored.values_list("device__device_id", flat=True)) == {"kasts-desktop"}
    assert stored.get(episode=episode(3)).timestamp == when + timedelta(minutes=3)
    assert set(stored.values_list("guid", flat=True)) == {"", "urn:99"}
    # It reads its own actions back (those of the last second or two), then nothing new.
    clock.advance(seconds=5)
    kasts.sync_episodes([])
    assert kasts.sync_episodes([]) == []
    assert Device.objects.filter(user=alice, device_id="kasts-desktop").exists()


def test_one_account_across_the_three_apis(alice: Any) -> None:
    opa = client_for(alice)
    _, secret = app_password(alice, "AntennaPod")
    phone = AntennaPod("alice", secret)
    gpodder = APIClient()
    gpodder.credentials(
        HTTP_AUTHORIZATION="Basic " + base64.b64encode(f"alice:{secret}".encode()).decode()
    )

    # An add on /v1/ reaches the Nextcloud app.
    added = opa.post("/v1/subscriptions", {"subscriptions": [{"feed_url": FEED}]}, format="json")
    assert added.status_code in (200, 201, 207), added.content
    phone.sync_subscriptions([OTHER_FEED], [])
    assert phone.local == {FEED, OTHER_FEED}

    # Its remove shows on /v1/ as unsubscribed.
    phone.sync_subscriptions([], [FEED])
    listed = opa.get("/v1/subscriptions").json()
    entries = listed["subscriptions"] if isinstance(listed, dict) else listed
    by_url = {s["feed_url"]: s for s in entries}
    assert by_url[FEED]["is_subscribed"] is False
    assert by_url[OTHER_FEED]["is_subscribed"] is True

    # Its plays show on /api/2/episodes, of its device.
    phone.sync_episodes([antennapod_play(1, position=321)])
    actions = gpodder.get("/api/2/episodes/alice.json?since=0").json()["actions"]
    assert [(a["episode"], a["position"], a.get("device")) for a in actions] == [
        (episode(1), 321, "AntennaPod")
    ]
    devices = {d["id"] for d in gpodder.get("/api/2/devices/alice.json").json()}
    assert "AntennaPod" in devices
    # ... and on the history page, of its device.
    browser = Client()
    browser.force_login(alice)
    history = browser.get("/history/").content.decode()
    assert "AntennaPod" in history
    assert "5:21" in history  # played to 321 s
