"""A download sends the app's own recent uploads back too (docs/gpodder-api.md, "Episode actions:
an app's own uploads come back"). AntennaPod and Kasts settle each episode's position among the
actions of one download (and those they have not sent yet): their own newer play must be in the
answer beside another device's older one uploaded late, or the older one wins. What the apps
count as one episode (the guid first, then the enclosure URL, any feed spelling) is more than
the service can tell, so nothing of the app's own is left out."""

from typing import Any

import pytest

from tests.episodes.test_api import download, play, upload
from tests.helpers import basic_app


def positions(answer: dict[str, Any]) -> list[tuple[str, int]]:
    return sorted((a["episode"].rsplit("/", 1)[-1], a["position"]) for a in answer["actions"])


@pytest.mark.parametrize(
    "late",
    [
        {},  # the same podcast and episode URLs
        {"podcast": "http://feeds.example.com/show.xml"},  # the feed spelled http (Kasts: one)
        {"episode": "https://dts.podtrac.com/redirect.mp3/cdn.example.com/1.mp3"},  # same guid
    ],
)
def test_an_apps_own_newer_play_comes_beside_a_late_older_one(app, alice, late):
    first = download(app)
    upload(app, [play(1, guid="ep-1", timestamp="2024-05-01T11:00:00", position=2000)])
    older = {**play(1, guid="ep-1", timestamp="2024-05-01T10:00:00", position=100), **late}
    upload(basic_app("alice"), [older])  # another app of hers

    assert positions(download(app, since=first["timestamp"])) == [("1.mp3", 100), ("1.mp3", 2000)]


def test_an_apps_own_upload_comes_back_in_its_next_download(app, alice):
    """Kasts may read one sync in several downloads and settle over all of them."""
    first = download(app)
    mine = upload(app, [play(1)])
    for since in (first["timestamp"], mine["timestamp"], mine["timestamp"] + 1):
        assert positions(download(app, since=since)) == [("1.mp3", 61)]
