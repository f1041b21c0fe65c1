"""Replays of how AntennaPod and Kasts talk to a gpodder server (tests/gpodder/clients.py),
against a live server."""

import pytest

from subscriptions.models import Subscription
from tests.gpodder.clients import AntennaPod, Kasts

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("transactional_db", "plain_http_cookies")]


def test_antennapod_logs_in_once_and_syncs_on_its_cookie(live_server, alice):
    phone = AntennaPod(live_server.url, "alice", "antennapod-phone")
    phone.login()
    phone.configure_device("AntennaPod on my phone", "mobile")
    # First sync: since=0, then every subscription uploaded.
    local = phone.sync(set(), ["https://podnews.net/rss", "feed://example.com/a.xml"], [])
    assert local == {"https://podnews.net/rss", "http://example.com/a.xml"}  # update_urls applied
    # Another device of the account adds and removes; the phone's next round sees both.
    tablet = AntennaPod(live_server.url, "alice", "antennapod-tablet")
    tablet.login()
    tablet.sync(set(), ["https://example.com/b.xml"], ["https://podnews.net/rss"])
    local = phone.sync(local, [], [])
    assert local == {"http://example.com/a.xml", "https://example.com/b.xml"}
    # A round with nothing new changes nothing, and no round ever sent Basic again.
    assert phone.sync(local, [], []) == local
    assert "Authorization" not in phone.http.headers


def test_antennapod_keeps_its_spelling_of_a_url_another_app_spells_otherwise(live_server, alice):
    phone = AntennaPod(live_server.url, "alice", "phone")
    phone.login()
    local = phone.sync(set(), ["https://example.com/feed?id=1&b=2"], [])
    other = AntennaPod(live_server.url, "alice", "desktop")
    other.login()
    other.sync(set(), ["HTTPS://EXAMPLE.COM:443/feed?id=1&b=2"], [])
    assert Subscription.objects.count() == 1
    # The phone compares URLs exactly: it must not be sent the variant.
    assert phone.subscription_changes(0)["add"] == ["https://example.com/feed?id=1&b=2"]
    assert phone.sync(local, [], []) == local


def test_kasts_sends_basic_on_every_request_and_since_plus_one(live_server, alice):
    kasts = Kasts(live_server.url, "alice", "kasts")
    assert kasts.sync(["https://podnews.net/rss"]) == []
    phone = AntennaPod(live_server.url, "alice", "phone")
    phone.login()
    phone.sync(set(), ["https://example.com/new.xml"], [])
    # Kasts' next round, from its stored timestamp + 1, sees the phone's add.
    assert "https://example.com/new.xml" in kasts.sync([])
