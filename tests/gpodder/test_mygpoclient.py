"""mygpoclient 1.10, the library inside gPodder, unmodified, against a live server.

It sends credentials only after a 401 with a Basic realm, at most three times per client
object, then relies on the session cookie; it posts JSON labelled as a form; it counts only an
empty 200 as success for device settings and the simple API's PUT. It syncs with an app password
too (docs/gpodder-api.md, "Authentication").
"""

from typing import Any

import pytest
from mygpoclient import api, http

from accounts import services
from subscriptions.models import Subscription
from tests.helpers import PASSWORD

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("transactional_db", "plain_http_cookies")]


@pytest.fixture
def client(live_server: Any, alice: Any) -> api.MygPodderClient:
    return api.MygPodderClient("alice", PASSWORD, root_url=live_server.url)


def test_a_device_is_set_up_listed_and_synced(client):
    assert client.update_device_settings("laptop", caption="My laptop", type="laptop") is True
    assert client.update_device_settings("phone", type="mobile") is True
    devices = {device.device_id: device for device in client.get_devices()}
    assert set(devices) == {"laptop", "phone"}
    assert (devices["laptop"].caption, devices["laptop"].type) == ("My laptop", "laptop")
    assert devices["phone"].type == "mobile"
    assert devices["phone"].subscriptions == 0

    result = client.update_subscriptions(
        "laptop",
        add_urls=["https://podnews.net/rss", " feed://example.com/feed.xml ", "ftp://x/y"],
    )
    assert sorted(result.update_urls) == [
        (" feed://example.com/feed.xml ", "http://example.com/feed.xml"),
        ("ftp://x/y", ""),
    ]
    # More than three calls on one client object: the later ones ride on the cookie.
    changes = client.pull_subscriptions("phone", since=0)
    assert sorted(changes.add) == ["http://example.com/feed.xml", "https://podnews.net/rss"]
    assert changes.remove == []
    later = client.pull_subscriptions("phone", since=changes.since)
    assert set(later.add) <= set(changes.add)

    client.update_subscriptions("phone", remove_urls=["https://podnews.net/rss"])
    changes = client.pull_subscriptions("laptop", since=result.since)
    assert changes.remove == ["https://podnews.net/rss"]
    assert [d.subscriptions for d in client.get_devices()] == [1, 1]


def test_the_simple_api_puts_and_gets_a_device_list(client):
    urls = ["https://podnews.net/rss", "https://example.com/feed.xml"]
    assert client.put_subscriptions("n900", urls) is True
    assert sorted(client.get_subscriptions("n900")) == sorted(urls)
    assert client.put_subscriptions("n900", urls[:1]) is True
    assert client.get_subscriptions("n900") == urls[:1]
    current = Subscription.objects.filter(is_subscribed=True).values_list("feed_url", flat=True)
    assert list(current) == urls[:1]


def test_wrong_password_and_another_users_path_are_refused(live_server, alice, bob):
    wrong = api.MygPodderClient("alice", "not the password", root_url=live_server.url)
    with pytest.raises(http.Unauthorized):
        wrong.get_devices()
    # bob's own credentials on alice's paths: a 401, as for a wrong password.
    intruder = api.MygPodderClient("bob", PASSWORD, root_url=live_server.url)
    intruder._locator._username = "alice"
    with pytest.raises(http.Unauthorized):
        intruder.get_devices()


def test_gpodder_follows_a_move_and_is_answered_the_new_url(client, alice):
    """gPodder rewrites its URLs as update_urls say: from then on it holds the new URL, and is
    answered in it; an app that does not follow update_urls keeps the old one."""
    from tests.helpers import client_for

    client.update_subscriptions("gpodder", add_urls=["https://old.example/feed"])
    opa = client_for(alice)
    guid = opa.get("/v1/subscriptions").json()["subscriptions"][0]["guid"]
    opa.patch(
        f"/v1/subscriptions/{guid}", {"new_feed_url": "https://new.example/feed"}, format="json"
    )
    result = client.update_subscriptions("gpodder", add_urls=["https://old.example/feed"])
    assert result.update_urls == [("https://old.example/feed", "https://new.example/feed")]
    # Unsubscribed elsewhere: gPodder is told in the URL it now holds.
    opa.patch(f"/v1/subscriptions/{guid}", {"is_subscribed": False}, format="json")
    assert client.pull_subscriptions("gpodder", since=result.since).remove == [
        "https://new.example/feed"
    ]


@pytest.mark.usefixtures("transactional_db", "plain_http_cookies")
def test_mygpoclient_syncs_with_an_app_password(live_server: Any, alice: Any) -> None:
    made, secret = services.app_password_create(user=alice, name="gPodder on the laptop")
    client = api.MygPodderClient("alice", secret, root_url=live_server.url)
    assert client.update_device_settings("laptop", caption="Laptop", type="laptop") is True
    result = client.update_subscriptions("laptop", add_urls=["https://podnews.net/rss"])
    assert client.pull_subscriptions("laptop", since=0).add == ["https://podnews.net/rss"]
    assert result.since > 0
    # More calls than mygpoclient sends credentials for: they ride on the cookie.
    for _ in range(3):
        assert [d.device_id for d in client.get_devices()] == ["laptop"]

    services.app_password_revoke(user=alice, app_password_id=made.pk)
    with pytest.raises(http.Unauthorized):
        client.get_devices()
    with pytest.raises(http.Unauthorized):
        api.MygPodderClient("alice", secret, root_url=live_server.url).get_devices()
    assert api.MygPodderClient("alice", PASSWORD, root_url=live_server.url).get_devices()
