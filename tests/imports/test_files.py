"""Importing a person's history from files (docs/imports.md): a gpodder.net episode-actions
answer, a bare list of actions, OPML, and this service's own export, which must come back into
another account as it left. Written from what each file holds, not from the importer's code."""

import io
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from core.exceptions import InvalidInput
from episodes import services as episodes_services
from episodes.models import EpisodeAction
from gpodder import selectors as gpodder_selectors
from gpodder.models import Device, DeviceFeed
from gpodder.services import device_update, subscription_pull, subscription_upload
from imports.files import file_source
from imports.services import Summary, history_import
from subscriptions.models import Subscription
from tests.episodes.helpers import upload_actions
from tests.helpers import subscribe
from tests.imports.batches import third_batch_raises
from web.selectors import everything

FEED = "https://feeds.example.com/show.xml"
OTHER = "https://other.example.org/podcast/rss"


def action(n: int, **changes: Any) -> dict[str, Any]:
    """One action as gpodder.net answers it."""
    return {
        "podcast": FEED,
        "episode": f"https://cdn.example.com/show/{n}.mp3",
        "action": "play",
        "timestamp": f"2019-03-0{1 + n % 9}T10:00:00",
        "device": "phone",
        "started": 10,
        "position": 100 + n,
        "total": 3600,
        **changes,
    }


def source(document: Any, *, max_actions: int = 1_000_000) -> Any:
    body = document if isinstance(document, bytes) else json.dumps(document).encode()
    return file_source(io.BytesIO(body), max_actions=max_actions)


def imported(user: Any, document: Any) -> Summary:
    return history_import(user=user, source=source(document))


def stored(user: Any) -> list[tuple[Any, ...]]:
    rows = EpisodeAction.objects.filter(user=user).order_by("episode", "action")
    return list(
        rows.values_list(
            "podcast",
            "episode",
            "action",
            "timestamp",
            "device__device_id",
            "guid",
            "started",
            "position",
            "total",
        )
    )


# --- gpodder.net's episode-actions answer ----------------------------------------------------


def test_a_gpodder_net_answer_brings_every_action_with_its_own_fields(alice: Any) -> None:
    answer = {
        "actions": [
            action(1),
            action(2, action="download", started=None, position=None, total=None),
            action(3, device="laptop", guid="ep-3-guid"),
        ],
        "timestamp": 1700000000,
    }
    summary = imported(alice, answer)
    assert (summary.actions_imported, summary.actions_already, summary.refused) == (3, 0, 0)
    rows = {row[1]: row for row in stored(alice)}
    assert rows["https://cdn.example.com/show/1.mp3"] == (
        FEED,
        "https://cdn.example.com/show/1.mp3",
        "play",
        datetime(2019, 3, 2, 10, tzinfo=UTC),
        "phone",
        "",
        10,
        101,
        3600,
    )
    assert rows["https://cdn.example.com/show/2.mp3"][2:5] == (
        "download",
        datetime(2019, 3, 3, 10, tzinfo=UTC),
        "phone",
    )
    assert rows["https://cdn.example.com/show/3.mp3"][4:6] == ("laptop", "ep-3-guid")
    # The devices the actions name are made, as an upload naming them would, and counted.
    assert gpodder_selectors.device_ids(user=alice) == ["laptop", "phone"]
    assert summary.devices == 2


def test_every_device_gets_the_history_at_its_next_sync(app: Any, alice: Any) -> None:
    """The import's receipt time is the `since` clock: a device that synced before the import
    gets the imported actions, however old their own timestamps."""
    first = app.get("/api/2/episodes/alice.json", {"since": 0}).json()
    assert first["actions"] == []
    imported(alice, {"actions": [action(1), action(2)], "timestamp": 5})
    later = app.get("/api/2/episodes/alice.json", {"since": first["timestamp"]}).json()
    assert sorted(a["episode"] for a in later["actions"]) == [
        "https://cdn.example.com/show/1.mp3",
        "https://cdn.example.com/show/2.mp3",
    ]


def test_a_second_run_adds_nothing(alice: Any) -> None:
    answer = {"actions": [action(n) for n in range(5)], "timestamp": 5}
    assert imported(alice, answer).actions_imported == 5
    again = imported(alice, answer)
    assert (again.actions_imported, again.actions_already) == (0, 5)
    assert EpisodeAction.objects.filter(user=alice).count() == 5


def test_actions_the_account_had_are_counted_already_there(alice: Any) -> None:
    upload_actions(alice, [action(1)])
    summary = imported(alice, [action(1), action(2), action(2)])  # one twice in the file
    assert (summary.actions_imported, summary.actions_already) == (1, 2)


def test_a_bare_list_of_actions_is_read_too(alice: Any) -> None:
    assert imported(alice, [action(1), action(2)]).actions_imported == 2


def test_a_byte_order_mark_is_read_past(alice: Any) -> None:
    body = b"\xef\xbb\xbf" + json.dumps([action(1)]).encode()
    assert imported(alice, body).actions_imported == 1


def test_bad_actions_are_refused_with_the_reason_and_the_others_imported(alice: Any) -> None:
    summary = imported(
        alice,
        [
            action(1),
            action(2, action="listen"),
            action(3, position=-5),
            action(4, podcast="ftp://nowhere/feed"),
            "not an object",
            action(5, device="a device with spaces"),
        ],
    )
    assert summary.actions_imported == 1
    assert summary.refused == 5
    reasons = " | ".join(f"{r.what}: {r.reason}" for r in summary.refusals)
    assert "listen of https://cdn.example.com/show/2.mp3: action must be one of" in reasons
    assert "position must be from 0" in reasons
    assert "its podcast or episode URL cannot be used" in reasons
    assert "an episode action: action must be a JSON object" in reasons
    assert "device must be 1 to 64 ASCII letters" in reasons


def test_devices_past_the_limit_are_refused_with_their_actions_alone(
    alice: Any, settings: Any
) -> None:
    settings.MAX_DEVICES = 2
    summary = imported(alice, [action(1), action(2, device="tablet"), action(3, device="tv")])
    assert summary.actions_imported == 2  # phone and tablet: the two the account may have
    assert summary.refused == 1
    assert "its device could not be made" in summary.refusals[0].reason
    assert "MAX_DEVICES" in summary.refusals[0].reason


def test_unicode_travels_whole(alice: Any) -> None:
    episode = "https://cdn.example.com/émission/épisode 1 🎧.mp3"
    summary = imported(alice, [action(1, episode=episode, guid="ガイド")])
    assert summary.actions_imported == 1
    assert stored(alice)[0][1] == episode
    assert stored(alice)[0][5] == "ガイド"


# --- files refused whole, nothing written ----------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"actions": [{"podcast": "x"', "not valid JSON"),
        (b"<html><body>Not here</body></html>", "OPML"),
        (b"\xff\xfe garbage", "neither an OPML file nor a JSON file"),
        (b'{"something": "else"}', "neither a gpodder.net episode-actions answer"),
        (b"", "neither an OPML file nor a JSON file"),
        (b"[" * 100_000, "nests deeper than 16 levels"),
    ],
    ids=["cut-off", "html", "binary", "other-json", "empty", "deep"],
)
def test_a_file_that_cannot_be_read_is_refused_whole(alice: Any, body: bytes, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        source(body)


def test_a_broken_file_changes_nothing_even_after_good_actions(alice: Any) -> None:
    body = json.dumps({"actions": [action(n) for n in range(50)]}).encode()[:-40]
    with pytest.raises(InvalidInput, match="not valid JSON"):
        source(body)
    assert not EpisodeAction.objects.exists()


def test_more_actions_than_the_limit_is_refused_whole(alice: Any) -> None:
    with pytest.raises(InvalidInput, match="holds 3 episode actions; an import takes at most 2"):
        source([action(1), action(2), action(3)], max_actions=2)
    # Whatever the items are: each would be read, and refused, one by one.
    with pytest.raises(InvalidInput, match="holds 3 episode actions"):
        source({"actions": [1, "two", [3]]}, max_actions=2)


def test_an_opml_file_is_bounded_as_the_opml_import_is(alice: Any, settings: Any) -> None:
    settings.MAX_OPML_ENTRIES = 2
    outlines = "".join(
        f'<outline type="rss" xmlUrl="https://f.example/{n}.xml"/>' for n in range(3)
    )
    document = f'<opml version="2.0"><body>{outlines}</body></opml>'.encode()
    with pytest.raises(InvalidInput, match=r"holds 3 subscriptions.*\(MAX_OPML_ENTRIES\)"):
        source(document)
    settings.MAX_BODY_BYTES = 100
    with pytest.raises(InvalidInput, match=r"larger than 100 bytes.*\(MAX_BODY_BYTES\)"):
        source(document)
    assert not Subscription.objects.exists()


def test_the_actions_are_read_as_a_stream_not_held(alice: Any) -> None:
    """The source reads its actions afresh from the file each time, one at a time: a change to
    the file after it was checked shows in the next read, which a copy held would not."""
    body = json.dumps({"actions": [action(n) for n in range(3)], "timestamp": 1}).encode()
    file = io.BytesIO(body)
    found = file_source(file, max_actions=10)
    assert found.action_count == 3
    assert next(found.actions())["episode"].endswith("/0.mp3")
    file.seek(0)
    file.write(body.replace(b"/show/0.mp3", b"/show/9.mp3"))
    assert next(found.actions())["episode"].endswith("/9.mp3")


# --- OPML ------------------------------------------------------------------------------------


def test_an_opml_file_adds_its_feeds_and_tells_the_ones_already_there(alice: Any) -> None:
    subscribe(alice, FEED)
    outlines = "".join(
        f'<outline type="rss" xmlUrl="{url}"/>'
        for url in (FEED, "HTTPS://FEEDS.EXAMPLE.COM/show.xml/", OTHER, "notaurl")
    )
    document = f'<?xml version="1.0"?><opml version="2.0"><body>{outlines}</body></opml>'
    summary = imported(alice, document.encode())
    assert (summary.podcasts_added, summary.podcasts_already, summary.podcasts_merged) == (1, 1, 0)
    assert summary.refused == 1
    assert set(Subscription.objects.filter(user=alice).values_list("feed_url", flat=True)) == {
        FEED,
        OTHER,
    }


# --- this service's own export, back in ------------------------------------------------------


def export_of(user: Any) -> bytes:
    return b"".join(everything(user=user))


def test_the_export_comes_back_into_another_account_as_it_left(alice: Any, bob: Any) -> None:
    subscribe(alice, OTHER)
    phone = device_update(user=alice, device_id="phone", caption="Pixel 8 ✨", type="mobile")
    device_update(user=alice, device_id="laptop", caption="Work", type="laptop")
    # The phone's own spelling of the feed, which it must keep being answered in.
    subscription_upload(
        user=alice, device=phone, add=["http://Feeds.Example.com/show.xml/"], remove=[]
    )
    gone = subscribe(alice, "https://gone.example/feed.xml")
    Subscription.objects.filter(pk=gone.pk).update(is_subscribed=False)
    upload_actions(alice, [action(1), action(2, device="laptop", guid="g2")])

    summary = imported(bob, export_of(alice))

    assert summary.refused == 0, summary.refusals
    assert summary.devices == 2
    assert summary.podcasts_added == 2  # the current ones; the unsubscribed one stays behind
    assert summary.actions_imported == 2
    assert set(Subscription.objects.filter(user=bob).values_list("feed_url", flat=True)) == set(
        Subscription.objects.filter(user=alice, is_subscribed=True).values_list(
            "feed_url", flat=True
        )
    )
    devices = {d.device_id: (d.caption, d.type) for d in Device.objects.filter(user=bob)}
    assert devices == {"phone": ("Pixel 8 ✨", "mobile"), "laptop": ("Work", "laptop")}
    assert DeviceFeed.objects.filter(device__user=bob, url="http://Feeds.Example.com/show.xml/")
    pulled = subscription_pull(user=bob, device_id="phone", since=0)
    assert "http://Feeds.Example.com/show.xml/" in pulled.add
    assert [row[1:] for row in stored(bob)] == [row[1:] for row in stored(alice)]
    # Each podcast keeps its guid: an Open Podcast API app sees the same podcast.
    guids = {
        s.feed_url: s.guid for s in Subscription.objects.filter(user=alice, is_subscribed=True)
    }
    assert {s.feed_url: s.guid for s in Subscription.objects.filter(user=bob)} == guids
    # And once more: nothing new.
    again = imported(bob, export_of(alice))
    assert (again.podcasts_added, again.actions_imported) == (0, 0)
    assert again.podcasts_already == 2
    assert again.actions_already == 2


def test_a_feed_held_under_another_spelling_is_merged_not_added(alice: Any, bob: Any) -> None:
    subscribe(bob, "https://feeds.example.com/show.xml")
    subscribe(alice, "HTTPS://feeds.example.com:443/show.xml/")
    summary = imported(bob, export_of(alice))
    assert (summary.podcasts_added, summary.podcasts_merged) == (0, 1)
    assert Subscription.objects.filter(user=bob).count() == 1


# --- the management command ------------------------------------------------------------------


def test_the_command_imports_each_file_and_says_what_it_did(alice: Any, tmp_path: Any) -> None:
    actions_file = tmp_path / "gpodder-net.json"
    actions_file.write_text(json.dumps({"actions": [action(1), action(2)], "timestamp": 1}))
    opml_file = tmp_path / "feeds.opml"
    opml_file.write_text(
        f'<opml version="2.0"><body><outline type="rss" xmlUrl="{OTHER}"/></body></opml>'
    )
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "import_history",
        "alice",
        str(actions_file),
        str(opml_file),
        "--no-progress",
        stdout=out,
        stderr=err,
    )
    text = out.getvalue()
    assert "gpodder-net.json: a gpodder.net episode-actions file" in text
    assert "episode actions: 2 imported, 0 already there; 0 refused." in text
    assert "feeds.opml: an OPML file" in text
    assert "podcasts: 1 added" in text
    assert EpisodeAction.objects.filter(user=alice).count() == 2


def test_the_command_checks_every_file_before_writing_any(alice: Any, tmp_path: Any) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps([action(1)]))
    bad = tmp_path / "bad.json"
    bad.write_text('{"actions": [')
    with pytest.raises(CommandError, match=r"bad\.json: .*not valid JSON"):
        call_command("import_history", "alice", str(good), str(bad), "--no-progress")
    assert not EpisodeAction.objects.exists()


def test_the_command_refuses_an_unknown_or_deactivated_account(alice: Any, tmp_path: Any) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps([action(1)]))
    with pytest.raises(CommandError, match="No user named 'nobody'"):
        call_command("import_history", "nobody", str(good), "--no-progress")
    with pytest.raises(CommandError, match=r"Cannot read .*missing\.json"):
        call_command("import_history", "alice", str(good), str(tmp_path / "missing.json"))
    alice.is_active = False
    alice.save()
    with pytest.raises(CommandError, match="deactivated"):
        call_command("import_history", "alice", str(good), "--no-progress")
    assert not EpisodeAction.objects.exists()


def test_a_run_cut_off_midway_leaves_whole_batches_and_a_rerun_completes_it(
    alice: Any, monkeypatch: Any
) -> None:
    """As a worker killed between two batches: what was written is whole, and the next run
    adds the rest and nothing twice."""
    upload = episodes_services.actions_upload
    third_batch_raises(monkeypatch, SystemExit("the worker was killed"))
    answer = {"actions": [action(n) for n in range(35)], "timestamp": 1}
    with pytest.raises(SystemExit):
        imported(alice, answer)
    assert EpisodeAction.objects.filter(user=alice).count() == 20  # two whole batches
    monkeypatch.setattr(episodes_services, "actions_upload", upload)
    again = imported(alice, answer)
    assert (again.actions_imported, again.actions_already) == (15, 20)
    assert EpisodeAction.objects.filter(user=alice).count() == 35
