"""AntennaPod in Nextcloud mode keeps its own clock as its next `since`, not the answers'
timestamps: a feed another device adds while it syncs (after its pull, before that clock) must
still reach it, however long the gap (docs/nextcloud.md, "Subscriptions")."""

from typing import Any

from tests.helpers import Clock
from tests.nextcloud.helpers import APP, app_password, body, nextcloud_client

PHONE_FEED = "https://phone.example.com/feed.xml"
TABLET_FEED = "https://tablet.example.com/feed.xml"


def test_a_feed_added_between_its_pull_and_its_own_clock_reaches_it(
    alice: Any, clock: Clock
) -> None:
    _, phone_secret = app_password(alice, "AntennaPod")
    _, tablet_secret = app_password(alice, "Tablet")
    phone = nextcloud_client("alice", phone_secret)
    tablet = nextcloud_client("alice", tablet_secret)

    assert body(phone.get(f"{APP}/subscriptions?since=0"))["add"] == []
    clock.advance(seconds=3)
    tablet.post(f"{APP}/subscription_change/create", {"add": [TABLET_FEED]}, format="json")
    clock.advance(seconds=3)
    phone.post(f"{APP}/subscription_change/create", {"add": [PHONE_FEED]}, format="json")
    own_clock = int(clock.now.timestamp())  # what AntennaPod keeps, whatever was answered
    clock.advance(seconds=60)

    pulled = body(phone.get(f"{APP}/subscriptions?since={own_clock}"))

    assert TABLET_FEED in pulled["add"]


def test_a_phone_whose_clock_runs_ahead_misses_nothing(alice: Any, clock: Clock) -> None:
    _, phone_secret = app_password(alice, "AntennaPod")
    phone = nextcloud_client("alice", phone_secret)
    tablet = nextcloud_client("alice")
    body(phone.get(f"{APP}/subscriptions?since=0"))
    clock.advance(seconds=5)
    tablet.post(f"{APP}/subscription_change/create", {"add": [TABLET_FEED]}, format="json")
    ahead = int(clock.now.timestamp()) + 600  # ten minutes fast

    assert TABLET_FEED in body(phone.get(f"{APP}/subscriptions?since={ahead}"))["add"]


def test_since_0_still_answers_no_remove_after_a_pull(alice: Any, clock: Clock) -> None:
    phone = nextcloud_client("alice")
    phone.post(f"{APP}/subscription_change/create", {"add": [PHONE_FEED]}, format="json")
    phone.post(f"{APP}/subscription_change/create", {"remove": [PHONE_FEED]}, format="json")
    body(phone.get(f"{APP}/subscriptions?since=0"))
    clock.advance(seconds=5)
    assert body(phone.get(f"{APP}/subscriptions?since=0"))["remove"] == []
