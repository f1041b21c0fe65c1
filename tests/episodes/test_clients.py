"""Episode actions with real client code against a live server: mygpoclient 1.10 unmodified,
and replays of AntennaPod's and Kasts' episode sync written from their code
(tests/episodes/clients.py)."""

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from mygpoclient import api, util

from episodes.models import EpisodeAction
from tests.episodes.clients import AntennaPod, Kasts
from tests.episodes.helpers import store_received
from tests.helpers import PASSWORD

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("transactional_db", "plain_http_cookies")]

FEED = "https://feeds.example.com/show.xml"
# Actions stored per second of a history made up for a test.
PER_SECOND = 500


def episode(n: int) -> str:
    return f"https://cdn.example.com/show/{n}.mp3"


def antennapod_play(n: int, when: datetime, position: int = 1800) -> dict[str, Any]:
    """EpisodeAction.writeToJsonObject of a play action."""
    return {
        "podcast": FEED,
        "episode": episode(n),
        "guid": f"urn:show:{n}",
        "action": "play",
        "timestamp": when.strftime("%Y-%m-%dT%H:%M:%S"),
        "started": position,
        "position": position,
        "total": position,
    }


def kasts_play(n: int, when: datetime, position: int) -> dict[str, Any]:
    # Qt::ISODate is "2024-05-01T10:30:00Z"; Kasts chops the Z.
    return {
        "podcast": FEED,
        "episode": episode(n),
        "guid": "",
        "action": "play",
        "timestamp": when.strftime("%Y-%m-%dT%H:%M:%SZ")[:-1],
        "started": 0,
        "position": position,
        "total": 3600,
    }


# --- mygpoclient ---------------------------------------------------------------------------------


@pytest.fixture
def client(live_server: Any, alice: Any) -> api.MygPodderClient:
    return api.MygPodderClient("alice", PASSWORD, root_url=live_server.url)


def test_mygpoclient_uploads_and_downloads_every_kind_of_action(client):
    when = util.datetime_to_iso8601(datetime(2024, 5, 1, 10, 30))  # as gPodder writes it
    actions = [
        api.EpisodeAction(FEED, episode(1), "download", "laptop", when),
        api.EpisodeAction(FEED, episode(1), "play", "laptop", when, 0, 120, 3600),
        api.EpisodeAction(FEED, episode(2), "play", "laptop", when, None, 30, None),
        api.EpisodeAction(FEED, episode(3), "delete", "laptop", when),
        api.EpisodeAction(FEED, episode(4), "new", None, None),
        api.EpisodeAction(FEED, episode(5), "flattr", "laptop", when),
    ]

    since = client.upload_episode_actions(actions)
    assert isinstance(since, int)

    # mygpoclient refuses the whole download over one action it cannot read: a timestamp
    # outside its formats, or play fields on an action that is not a play.
    changes = client.download_episode_actions(since=0)
    got = [(a.episode, a.action, a.device, a.started, a.position, a.total) for a in changes.actions]
    assert got == [
        (episode(1), "download", "laptop", None, None, None),
        (episode(1), "play", "laptop", 0, 120, 3600),
        (episode(2), "play", "laptop", None, 30, None),
        (episode(3), "delete", "laptop", None, None, None),
        (episode(4), "new", None, None, None, None),
        (episode(5), "flattr", "laptop", None, None, None),
    ]
    assert all(util.iso8601_to_datetime(a.timestamp) for a in changes.actions)
    assert changes.actions[0].timestamp == "2024-05-01T10:30:00"

    # The same batch again (gPodder retries after a timeout) is stored once; but the action
    # sent without a time happened when it was received, which is another time now.
    client.upload_episode_actions(actions)
    assert EpisodeAction.objects.count() == 7


def test_mygpoclient_filters_by_podcast_and_device_and_reads_on_from_since(client):
    when = util.datetime_to_iso8601(datetime(2024, 5, 1, 10, 30))
    client.upload_episode_actions(
        [
            api.EpisodeAction(FEED, episode(1), "download", "laptop", when),
            api.EpisodeAction("https://other.example.com/feed", episode(2), "new", "phone", when),
        ]
    )
    by_podcast = client.download_episode_actions(podcast="HTTPS://FEEDS.example.com/show.xml")
    assert [a.episode for a in by_podcast.actions] == [episode(1)]
    by_device = client.download_episode_actions(device_id="phone")
    assert [a.episode for a in by_device.actions] == [episode(2)]

    first = client.download_episode_actions(since=0)
    client.upload_episode_actions(
        [api.EpisodeAction(FEED, episode(3), "play", "laptop", when, 0, 9, 10)]
    )
    later = client.download_episode_actions(since=first.since)
    assert episode(3) in [a.episode for a in later.actions]


# --- AntennaPod -----------------------------------------------------------------------------------


def test_antennapods_first_sync_uploads_every_played_episode_in_batches_of_30(live_server, alice):
    phone = AntennaPod(live_server.url, "alice", "antennapod-phone")
    phone.login()
    played = [antennapod_play(n, datetime.now(UTC)) for n in range(95)]

    assert phone.episode_sync(played) == []

    assert phone.uploads == 4
    assert EpisodeAction.objects.filter(device__device_id="antennapod-phone").count() == 95
    kasts = Kasts(live_server.url, "alice", "kasts")
    seen = kasts.episode_sync([])
    assert sorted(a["episode"] for a in seen) == sorted(episode(n) for n in range(95))
    assert {a["guid"] for a in seen} == {f"urn:show:{n}" for n in range(95)}
    assert {a["device"] for a in seen} == {"antennapod-phone"}
    # Its next round reads back its own upload (its timestamp was the download's before it),
    # and stores nothing; once a few seconds have passed, a round reads nothing.
    again = phone.episode_sync([])
    assert {a["device"] for a in again} == {"antennapod-phone"}
    time.sleep(3)
    phone.episode_sync([])
    assert phone.episode_sync([]) == []
    assert EpisodeAction.objects.count() == 95


def test_a_phone_offline_since_yesterday_reaches_a_device_that_pulled_since(live_server, alice):
    laptop = AntennaPod(live_server.url, "alice", "laptop")
    laptop.login()
    phone = AntennaPod(live_server.url, "alice", "phone")
    phone.login()
    laptop.episode_sync([])  # the laptop pulls; the phone is offline

    yesterday = datetime.now(UTC) - timedelta(days=1)
    phone.episode_sync([antennapod_play(7, yesterday, position=1234)])

    seen = laptop.episode_sync([])
    assert [(a["episode"], a["position"]) for a in seen] == [(episode(7), 1234)]
    assert seen[0]["timestamp"] == yesterday.strftime("%Y-%m-%dT%H:%M:%S")


def test_a_new_antennapod_learns_a_20000_action_history_in_one_sync(live_server, alice):
    """AntennaPod reads one download per sync: the whole history comes in it, and the upload
    after it (whose timestamp it keeps) skips nothing another app sent meanwhile."""
    start = (datetime.now(UTC) - timedelta(days=3)).replace(microsecond=0)
    seconds = [s for s in range(40) for _ in range(PER_SECOND)]  # gPodder's history
    store_received(alice, seconds, start, first=1000)
    phone = AntennaPod(live_server.url, "alice", "phone")
    phone.login()

    seen = phone.episode_sync([antennapod_play(n, datetime.now(UTC)) for n in range(40)])

    assert len(seen) == 20_000
    assert {a["episode"] for a in seen} == {episode(1000 + i) for i in range(len(seconds))}
    assert phone.uploads == 2  # its 40 plays, in batches of 30
    later = phone.episode_sync([])  # its next round: its own plays again at most
    assert all(a["device"] == "phone" for a in later)


# --- Kasts ---------------------------------------------------------------------------------------


def test_kasts_first_sync_is_aggregated_and_later_rounds_see_the_phone(live_server, alice):
    phone = AntennaPod(live_server.url, "alice", "phone")
    phone.login()
    now = datetime.now(UTC).replace(microsecond=0)
    phone.episode_sync(
        [
            antennapod_play(1, now - timedelta(hours=2), position=100),
            antennapod_play(1, now - timedelta(hours=1), position=900),
            antennapod_play(2, now - timedelta(hours=1), position=50),
        ]
    )
    kasts = Kasts(live_server.url, "alice", "kasts-laptop")

    first = kasts.episode_sync([kasts_play(3, now, 42)])

    # aggregated=true: only the latest action of each episode.
    assert sorted((a["episode"], a["position"]) for a in first) == [
        (episode(1), 900),
        (episode(2), 50),
    ]
    stored = EpisodeAction.objects.get(episode=episode(3))
    assert stored.device is not None
    assert (stored.guid, stored.device.device_id, stored.timestamp) == ("", "kasts-laptop", now)

    phone.episode_sync([antennapod_play(4, now, position=77)])
    later = kasts.episode_sync([])
    assert (episode(4), 77) in [(a["episode"], a.get("position")) for a in later]


def test_a_new_kasts_learns_a_20000_action_history_in_one_download(live_server, alice):
    start = (datetime.now(UTC) - timedelta(days=3)).replace(microsecond=0)
    seconds = [s for s in range(40) for _ in range(PER_SECOND)]
    store_received(alice, seconds, start)
    kasts = Kasts(live_server.url, "alice", "kasts")
    seen = kasts.episode_sync([])
    assert {a["episode"] for a in seen} == {episode(i) for i in range(len(seconds))}
    assert kasts.downloads == 1
