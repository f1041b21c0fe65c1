"""Importing from servers on loopback (docs/imports.md, "From another server"): one shaped like
gpodder.net's answers, and hostile ones, each told in words with nothing half-stored."""

import io
import json
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from episodes.models import EpisodeAction
from gpodder.models import Device, DeviceFeed
from gpodder.services import subscription_pull
from imports.remote import Account, ImportFailed, server_source
from imports.services import history_import
from subscriptions.models import Subscription
from tests.imports.standins import PASSWORD, USER, standin

OTHER_FEED = "https://other.example.org/podcast/rss"


@pytest.fixture
def loopback(settings: Any) -> None:
    """The stand-ins listen on loopback, a private network an import reaches only when told."""
    settings.IMPORT_ALLOWED_NETWORKS = ["127.0.0.0/8"]


def import_from(user: Any, url: str, password: str = PASSWORD, **options: Any) -> Any:
    with server_source(Account(server=url, username=USER, password=password, **options)) as source:
        return history_import(user=user, source=source)


def nothing_stored(user: Any) -> None:
    assert not Device.objects.filter(user=user).exists()
    assert not Subscription.objects.filter(user=user).exists()
    assert not EpisodeAction.objects.filter(user=user).exists()


@pytest.mark.usefixtures("loopback")
def test_a_gpodder_net_account_comes_in_whole(alice: Any) -> None:
    with standin("mygpo") as server:
        summary = import_from(alice, server.url)
        mygpo = server.mygpo
    assert summary.refused == 0, summary.refusals
    devices = {d.device_id: (d.caption, d.type) for d in Device.objects.filter(user=alice)}
    assert devices == {
        "n900": ("Carol's N900", "mobile"),
        "desktop": ("gPodder on the desk", "desktop"),
    }
    # Two spellings of one feed, and another feed: two podcasts, each device in its spelling.
    assert summary.podcasts_added == 2
    assert Subscription.objects.filter(user=alice).count() == 2
    assert (
        "HTTPS://Feeds.Example.com/show.xml/"
        in subscription_pull(user=alice, device_id="n900", since=0).add
    )
    assert (
        "https://feeds.example.com/show.xml"
        in subscription_pull(user=alice, device_id="desktop", since=0).add
    )
    # Every action, across the pages, once (each page repeats the last one of the one before).
    assert summary.actions_imported == len(mygpo.actions) == EpisodeAction.objects.count()
    played = EpisodeAction.objects.get(episode="https://cdn.example.com/show/4.mp3")
    assert played.device is not None
    assert (played.action, played.position, played.total, played.device.device_id) == (
        "play",
        240,
        3600,
        "desktop",
    )
    assert played.guid == "guid-4"
    assert EpisodeAction.objects.get(episode="https://cdn.example.com/show/1.mp3").guid == ""
    # Run again: everything there already.
    with standin("mygpo") as server:
        again = import_from(alice, server.url)
    assert (again.podcasts_added, again.actions_imported) == (0, 0)
    assert again.actions_already == len(mygpo.actions)


@pytest.mark.usefixtures("loopback")
def test_a_feed_that_moved_here_takes_the_old_url_as_its_own(alice: Any) -> None:
    from subscriptions.services import SubscriptionUpdate, subscription_update
    from tests.helpers import subscribe

    moved = subscribe(alice, "https://other.example.org/podcast/rss")
    subscription_update(
        user=alice,
        guid=moved.guid,
        change=SubscriptionUpdate(new_feed_url="https://moved.example.org/rss"),
    )
    with standin("mygpo") as server:
        summary = import_from(alice, server.url)
    assert summary.podcasts_merged == 1  # the old URL reaches the moved subscription
    assert Subscription.objects.filter(user=alice).count() == 2
    assert DeviceFeed.objects.filter(device__device_id="n900", url__contains="other.example.org")


def test_a_private_address_is_refused_unless_allowed(alice: Any) -> None:
    with (
        standin("mygpo") as server,
        pytest.raises(ImportFailed, match=r"this machine itself"),
    ):
        import_from(alice, server.url)
    nothing_stored(alice)


@pytest.mark.usefixtures("loopback")
@pytest.mark.parametrize(
    ("behaviour", "message"),
    [
        ("unauthorized", "refused this username and password \\(HTTP 401\\)"),
        ("html", "with a web page, not JSON"),
        ("wrong_shape", "device list is not a list"),
        ("redirect_private", "sent the import to another address \\(http://10.1.2.3/"),
        ("huge", "larger than 10,485,760 bytes"),
        ("two_million", "holds 2,000,000 episode actions; an import takes at most 1,000,000"),
    ],
)
def test_a_hostile_server_is_told_in_words_and_nothing_is_stored(
    alice: Any, behaviour: str, message: str
) -> None:
    with standin(behaviour) as server, pytest.raises(ImportFailed, match=message):
        import_from(alice, server.url)
    nothing_stored(alice)


@pytest.mark.usefixtures("loopback")
def test_a_server_that_drips_is_cut_at_the_import_timeout(alice: Any, settings: Any) -> None:
    settings.IMPORT_TIMEOUT = 2
    with (
        standin("drip") as server,
        pytest.raises(ImportFailed, match=r"longer than 2 seconds.*IMPORT_TIMEOUT"),
    ):
        import_from(alice, server.url)
    nothing_stored(alice)


@pytest.mark.usefixtures("loopback")
def test_a_wrong_password_is_refused(alice: Any) -> None:
    with standin("mygpo") as server, pytest.raises(ImportFailed, match="refused this username"):
        import_from(alice, server.url, password="wrong")
    nothing_stored(alice)


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("ftp://example.com", "like https://gpodder.net"),
        ("https://example.com/?q=1", "without a query"),
        ("https://user:pw@example.com", "without a query or a password"),
        ("file:///etc/passwd", "like https://gpodder.net"),
        ("https://[::1", "like https://gpodder.net"),
        ("https://example.com:port", "like https://gpodder.net"),
        ("https://example.com/" + "a" * 2040, "longer than 2048 characters"),
    ],
)
def test_a_bad_address_is_refused_before_any_request(
    alice: Any, address: str, message: str
) -> None:
    with pytest.raises(ImportFailed, match=message):
        import_from(alice, address)


@pytest.mark.usefixtures("loopback")
def test_the_command_imports_from_a_server(alice: Any, monkeypatch: Any) -> None:
    monkeypatch.setenv("IMPORT_PASSWORD", PASSWORD)
    out = io.StringIO()
    with standin("mygpo") as server:
        call_command(
            "import_history", "alice", "--server", server.url, "--username", USER,
            "--no-progress", stdout=out,
        )  # fmt: skip
    assert "the gpodder API at 127.0.0.1" in out.getvalue()
    assert "episode actions: 8 imported" in out.getvalue()
    assert PASSWORD not in out.getvalue()


@pytest.mark.usefixtures("loopback")
def test_the_command_says_why_a_server_failed(alice: Any, monkeypatch: Any) -> None:
    monkeypatch.setenv("IMPORT_PASSWORD", "wrong")
    with standin("mygpo") as server, pytest.raises(CommandError, match="refused this username"):
        call_command("import_history", "alice", "--server", server.url, "--username", USER)
    with pytest.raises(CommandError, match="--server needs --username"):
        call_command("import_history", "alice", "--server", "https://example.com")


@pytest.mark.usefixtures("loopback")
def test_devices_past_the_limit_are_named_and_not_read(alice: Any, settings: Any) -> None:
    settings.MAX_DEVICES = 1
    with standin("mygpo") as server:
        summary = import_from(alice, server.url)
        asked = server.requests
    assert summary.devices == 1
    assert summary.refusals[0].what == "device 'desktop'"
    assert "past the 1 devices an account may have (MAX_DEVICES)" in summary.refusals[0].reason
    assert not any("/subscriptions/carol/desktop.json" in line for line in asked)
    # The desktop's actions are refused with it; the N900's come in.
    assert summary.actions_imported == 4


@pytest.mark.usefixtures("loopback")
def test_a_device_with_too_many_subscriptions_is_told(alice: Any, settings: Any) -> None:
    settings.MAX_OPML_ENTRIES = 1
    with standin("mygpo") as server, pytest.raises(ImportFailed, match="MAX_OPML_ENTRIES"):
        import_from(alice, server.url)
    nothing_stored(alice)


@pytest.mark.usefixtures("loopback")
def test_a_certificate_that_does_not_check_out_is_refused(alice: Any) -> None:
    with (
        standin("mygpo", tls=True) as server,
        pytest.raises(ImportFailed, match="TLS certificate does not check out"),
    ):
        import_from(alice, server.url)
    assert server.url.startswith("https://")
    nothing_stored(alice)


@pytest.mark.usefixtures("loopback")
def test_a_failure_names_what_was_read_never_the_username(alice: Any) -> None:
    with (
        standin("devices_500") as server,
        pytest.raises(ImportFailed, match="HTTP 500 for its device list") as failed,
    ):
        import_from(alice, server.url)
    assert USER not in str(failed.value)
    nothing_stored(alice)


@pytest.mark.usefixtures("loopback")
def test_a_nextcloud_server_is_found_and_its_minus_ones_are_no_values(alice: Any) -> None:
    with standin("nextcloud") as server:
        summary = import_from(alice, server.url)
    assert summary.refused == 0, summary.refusals
    assert summary.actions_imported == 2
    download = EpisodeAction.objects.get(episode="https://cdn.example.com/1.mp3")
    assert (download.action, download.started, download.position) == ("download", None, None)
    play = EpisodeAction.objects.get(episode="https://cdn.example.com/2.mp3")
    assert (play.position, play.total) == (90, None)
    assert list(Device.objects.filter(user=alice).values_list("device_id", flat=True)) == [
        "nextcloud"
    ]


@pytest.mark.usefixtures("loopback")
def test_actions_of_one_second_past_a_page_are_told(alice: Any, monkeypatch: Any) -> None:
    """mygpo pages by the actions' own time: more of one second than a page holds cannot all be
    asked for. Those that can are imported, and the rest told."""
    from imports import remote
    from tests.imports import standins

    monkeypatch.setattr(remote, "GPODDER_NET_PAGE", standins.PAGE)
    with standin("mygpo") as server:
        for action in server.mygpo.actions:
            action["timestamp"] = "2012-05-01T08:30:15"
        summary = import_from(alice, server.url)
    assert summary.actions_imported == standins.PAGE
    assert any("share one second" in r.reason for r in summary.refusals)


@pytest.mark.usefixtures("loopback")
def test_answers_that_open_with_a_byte_order_mark_are_read(alice: Any) -> None:
    """Some servers (PHP's, say) write one; json.loads took it, and so does the import."""
    with standin("mygpo") as server:
        for path, answer in (
            (f"/api/2/devices/{USER}.json", server.mygpo.devices),
            (f"/api/2/subscriptions/{USER}/n900.json", {"add": [OTHER_FEED], "remove": []}),
        ):
            server.bodies[path] = b"\xef\xbb\xbf" + json.dumps(answer).encode()
        summary = import_from(alice, server.url)
    assert summary.refused == 0, summary.refusals
    assert summary.devices == 2
    assert OTHER_FEED in subscription_pull(user=alice, device_id="n900", since=0).add
