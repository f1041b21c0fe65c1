"""AntennaPod's subscription round against a live server: it pulls, processes what it got,
uploads its own changes, and keeps the **upload's** timestamp as its next `since`. A feed another
device adds between its pull and its upload must still reach it, however long the gap."""

from typing import Any

import pytest

from tests.gpodder.clients import AntennaPod, Kasts

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("transactional_db", "plain_http_cookies")]


def test_a_feed_added_elsewhere_between_antennapods_pull_and_upload_reaches_it(
    live_server: Any, alice: Any, clock: Any
) -> None:
    phone = AntennaPod(live_server.url, "alice", "antennapod-phone")
    phone.login()
    local = phone.sync(set(), ["https://podnews.net/rss"], [])
    clock.advance(seconds=60)

    # The next round, replayed step by step: the pull ...
    changes = phone.subscription_changes(phone.last_sync)
    local = (local | set(changes["add"])) - set(changes["remove"])
    phone.last_sync = changes["timestamp"]
    # ... another device adds a feed 3 s later, while the phone processes what it got ...
    clock.advance(seconds=3)
    tablet = AntennaPod(live_server.url, "alice", "antennapod-tablet")
    tablet.login()
    tablet.upload_changes(["https://example.com/tablet.xml"], [])
    # ... and the phone uploads its own change 6 s after that, keeping the upload's timestamp.
    clock.advance(seconds=6)
    answer = phone.upload_changes(["https://example.com/phone.xml"], [])
    local |= {"https://example.com/phone.xml"}
    phone.last_sync = answer["timestamp"]

    clock.advance(seconds=60)
    local = phone.sync(local, [], [])
    assert local == {
        "https://podnews.net/rss",
        "https://example.com/phone.xml",
        "https://example.com/tablet.xml",
    }


def test_kasts_keeps_the_upload_timestamp_plus_one_and_still_gets_the_feed(
    live_server: Any, alice: Any, clock: Any
) -> None:
    """Kasts stores the upload's timestamp + 1; the gap between its pull and upload is within
    one round (Kasts.sync), so the other device's add comes just before the round."""
    kasts = Kasts(live_server.url, "alice", "kasts")
    kasts.sync(["https://podnews.net/rss"])
    clock.advance(seconds=60)
    phone = AntennaPod(live_server.url, "alice", "phone")
    phone.login()
    # Kasts' pull first, then the phone's add 4 s later, then Kasts' upload 4 s after it.
    kasts_pull = kasts.request(
        "GET", f"/api/2/subscriptions/alice/kasts.json?since={kasts.since}"
    ).json()
    kasts.since = kasts_pull["timestamp"] + 1
    clock.advance(seconds=4)
    phone.upload_changes(["https://example.com/phone.xml"], [])
    clock.advance(seconds=4)
    body = b'{"add":["https://example.com/kasts.xml"],"remove":[]}'
    answer = kasts.request("POST", "/api/2/subscriptions/alice/kasts.json", body).json()
    kasts.since = answer["timestamp"] + 1
    clock.advance(seconds=60)
    assert "https://example.com/phone.xml" in kasts.sync([])
