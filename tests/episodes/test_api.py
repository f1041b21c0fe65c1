"""POST and GET /api/2/episodes/{user}.json (docs/gpodder-api.md, "Episode actions"): the
shape, the rules, since counted from when the service received an action, whole answers, one
account's data, and the queries an upload costs."""

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from deletions import services as deletions
from episodes.models import EpisodeAction
from gpodder.models import Device
from subscriptions import feeds
from subscriptions import services as subscriptions
from tests.episodes.helpers import store_received
from tests.helpers import assert_error, basic, basic_app, subscribe

EPISODES = "/api/2/episodes/alice.json"
# Actions stored per second of a history made up for a test.
PER_SECOND = 500
FEED = "https://feeds.example.com/show.xml"


def play(n: int = 1, *, feed: str = FEED, **fields: Any) -> dict[str, Any]:
    return {
        "podcast": feed,
        "episode": f"https://cdn.example.com/{n}.mp3",
        "action": "play",
        "timestamp": "2024-05-01T10:30:00",
        "started": 0,
        "position": 60 + n,
        "total": 3600,
        **fields,
    }


def upload(client: APIClient, actions: Any, **headers: Any) -> dict[str, Any]:
    response = client.post(
        EPISODES, json.dumps(actions), content_type="application/json", **headers
    )
    assert response.status_code == 200, response.content
    return response.json()


def download(client: APIClient, **params: Any) -> dict[str, Any]:
    """One download's answer, whole (a large one is streamed)."""
    response = client.get(EPISODES, params)
    assert response.status_code == 200, response.content
    if response.streaming:
        return json.loads(b"".join(response.streaming_content))  # type: ignore[attr-defined]
    return response.json()


# --- Upload ------------------------------------------------------------------------------------


def test_an_upload_answers_a_timestamp_and_update_urls_and_is_read_back(app, alice):
    answer = upload(app, [play(1, device="phone", guid="ep-1")])

    assert set(answer) == {"timestamp", "update_urls"}
    assert answer["update_urls"] == []
    assert isinstance(answer["timestamp"], int)
    assert download(app)["actions"] == [
        {
            "podcast": FEED,
            "episode": "https://cdn.example.com/1.mp3",
            "action": "play",
            "timestamp": "2024-05-01T10:30:00",
            "device": "phone",
            "guid": "ep-1",
            "started": 0,
            "position": 61,
            "total": 3600,
        }
    ]


def test_the_output_has_exactly_the_fields_of_each_action_and_never_a_null(app, alice):
    upload(
        app,
        [
            {"podcast": FEED, "episode": "e1", "action": "download"},
            {"podcast": FEED, "episode": "e2", "action": "play", "position": 5},
            {
                "podcast": FEED,
                "episode": "e3",
                "action": "NEW",
                "timestamp": "2024-05-01T12:00:00.5+02:00",
            },
        ],
    )
    actions = download(app)["actions"]
    assert [set(a) for a in actions] == [
        {"podcast", "episode", "action", "timestamp"},
        {"podcast", "episode", "action", "timestamp", "position"},
        {"podcast", "episode", "action", "timestamp"},
    ]
    assert actions[2]["action"] == "new"
    assert actions[2]["timestamp"] == "2024-05-01T10:00:00"
    # Without a timestamp the action happened when it was received.
    sent = datetime.strptime(actions[0]["timestamp"], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    assert abs(sent - datetime.now(UTC)) < timedelta(minutes=1)
    assert all(value is not None for a in actions for value in a.values())


def test_a_malformed_action_refuses_the_whole_request_naming_its_index(app, alice):
    actions = [play(1), play(2), play(3, timestamp="the day before yesterday")]

    response = app.post(EPISODES, json.dumps(actions), content_type="application/json")

    body = assert_error(response, 400)
    assert body["message"].startswith("Input could not be validated: action 2: timestamp ")
    assert list(body["errors"]) == ["2"]
    assert not EpisodeAction.objects.exists()
    assert not Device.objects.filter(device_id="phone").exists()


def test_an_action_sent_again_is_stored_once(app, alice):
    actions = [play(1, device="phone"), play(2, device="phone")]
    upload(app, actions)
    upload(app, actions)  # the answer was lost; the app sends the batch again
    upload(app, [play(1, device="phone"), play(1, device="phone")])

    assert EpisodeAction.objects.count() == 2
    assert len(download(app)["actions"]) == 2


def test_identical_but_for_one_field_is_another_action(app, alice):
    upload(app, [play(1), play(1, position=99), play(1, device="tablet"), play(1, guid="g")])
    assert EpisodeAction.objects.count() == 4


def test_urls_are_sanitised_and_reported_and_an_unusable_podcast_is_left_out(app, alice):
    answer = upload(
        app,
        [
            play(1, feed="feed://feeds.example.com/show.xml"),
            play(2, feed="  https://feeds.example.com/show.xml "),
            play(3, feed="mailto:someone@example.com"),
            {**play(4), "episode": "itpc://cdn.example.com/4.mp3"},
        ],
    )
    assert sorted(answer["update_urls"]) == sorted(
        [
            ["feed://feeds.example.com/show.xml", "http://feeds.example.com/show.xml"],
            ["  https://feeds.example.com/show.xml ", FEED],
            ["mailto:someone@example.com", ""],
            ["itpc://cdn.example.com/4.mp3", "http://cdn.example.com/4.mp3"],
        ]
    )
    stored = EpisodeAction.objects.order_by("id").values_list("podcast", "episode")
    assert list(stored) == [
        ("http://feeds.example.com/show.xml", "https://cdn.example.com/1.mp3"),
        (FEED, "https://cdn.example.com/2.mp3"),
        (FEED, "http://cdn.example.com/4.mp3"),
    ]


def test_devices_are_created_on_first_use_and_kept_per_action(app, alice):
    upload(app, [play(1, device="phone"), play(2, device="laptop"), play(3)])
    upload(app, [play(4, device="phone")])

    devices = Device.objects.filter(user=alice).order_by("device_id")
    assert [(d.device_id, d.type, d.caption) for d in devices] == [
        ("laptop", "other", ""),
        ("phone", "other", ""),
    ]
    shown = [a.get("device") for a in download(app)["actions"]]
    assert shown == ["phone", "laptop", None, "phone"]
    response = app.get("/api/2/devices/alice.json")
    assert [d["id"] for d in response.json()] == ["laptop", "phone"]


def test_an_empty_list_stores_nothing_and_answers(app, alice):
    answer = upload(app, [])
    assert answer["update_urls"] == []
    assert not EpisodeAction.objects.exists()


@pytest.mark.parametrize(
    "body", [b"{}", b'"play"', b"", b"[", b"\xff\xfe", b"null", b"[[]]", b"[1]", b"[null]"]
)
def test_a_body_that_is_not_a_list_of_actions_is_a_400(app, alice, body):
    response = app.post(EPISODES, body, content_type="application/json")
    assert_error(response, 400)
    assert not EpisodeAction.objects.exists()


def test_more_actions_than_the_limit_are_a_400_naming_it(app, alice, settings):
    settings.MAX_EPISODE_ACTIONS = 30
    response = app.post(
        EPISODES, json.dumps([play(n) for n in range(31)]), content_type="application/json"
    )
    body = assert_error(response, 400)
    assert "at most 30 per request" in body["message"]
    assert not EpisodeAction.objects.exists()


def test_a_body_over_the_size_limit_is_a_413(app, alice, settings):
    big = [play(n, guid="g" * 2000) for n in range(600)]  # over 1 MiB
    response = app.post(EPISODES, json.dumps(big), content_type="application/json")
    assert_error(response, 413)
    assert not EpisodeAction.objects.exists()


def test_an_upload_costs_the_same_queries_for_1_action_as_for_1000(app, alice):
    upload(app, [play(0, device="phone")])  # the session and the device exist

    counts = []
    for size in (1, 30, 1000):
        batch = [play(n, device="phone", guid=f"ünï-{size}-{n}") for n in range(size)]
        with CaptureQueriesContext(connection) as queries:
            upload(app, batch)
        counts.append(len(queries))
    assert counts[0] == counts[1] == counts[2], counts
    # Basic, the session, the devices, the lock, the received clock read and moved, the insert,
    # and the savepoint's two (the test's transaction makes the service's one a savepoint).
    assert counts[0] <= 9, counts
    assert EpisodeAction.objects.count() == 1032


def test_new_devices_cost_the_same_queries_for_1_as_for_10(app, alice):
    upload(app, [])  # the session exists
    counts = []
    for names in (["phone"], [f"device-{n}" for n in range(10)]):
        batch = [play(n, device=names[n % len(names)]) for n in range(1000)]
        with CaptureQueriesContext(connection) as queries:
            upload(app, batch)
        counts.append(len(queries))
    # Of them, the new devices take a savepoint (in a test's transaction only), the account's
    # lock, a count, the insert, and the savepoint's release.
    assert counts[0] == counts[1] <= 14, counts
    assert Device.objects.filter(user=alice).count() == 11


# --- Download ----------------------------------------------------------------------------------


def test_since_counts_from_when_the_service_received_an_action(app, alice, clock):
    """A phone offline since yesterday uploads yesterday's actions after the laptop pulled:
    they reach the laptop, whatever their own time says."""
    laptop = download(app)
    assert laptop["actions"] == []

    clock.advance(seconds=5)
    yesterday = (clock.now - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%S")
    upload(app, [play(1, timestamp=yesterday, device="phone")])

    for since in (laptop["timestamp"], laptop["timestamp"] + 1):  # AntennaPod, Kasts
        actions = download(app, since=since)["actions"]
        assert [a["timestamp"] for a in actions] == [yesterday]


def test_since_misses_nothing_received_in_the_second_it_answered(app, alice, clock):
    upload(app, [play(1)])
    first = download(app)
    upload(app, [play(2)])  # the same second

    for since in (first["timestamp"], first["timestamp"] + 1):
        episodes = [a["episode"] for a in download(app, since=since)["actions"]]
        assert "https://cdn.example.com/2.mp3" in episodes


def test_a_later_pull_does_not_send_everything_again(app, alice, clock):
    upload(app, [play(1)])
    clock.advance(seconds=10)
    first = download(app)
    assert len(first["actions"]) == 1
    assert download(app, since=first["timestamp"] + 1)["actions"] == []
    assert download(app, since=first["timestamp"])["actions"] == []


@pytest.mark.parametrize(
    "since", ["-1", "abc", "1.5", "99999999999999999999", "\uff11", "9" * 5000, "0" * 13]
)
def test_a_bad_since_is_a_400_naming_it(app, alice, since):
    body = assert_error(app.get(EPISODES, {"since": since}), 400)
    assert "since" in body["message"]


def test_aggregated_keeps_the_latest_action_of_each_episode(app, alice):
    upload(
        app,
        [
            play(1, timestamp="2024-05-01T10:00:00", position=10),
            play(1, timestamp="2024-05-01T11:00:00", position=50),
            play(1, timestamp="2024-05-01T09:00:00", position=5),  # late, but older
            {"podcast": FEED, "episode": "https://cdn.example.com/2.mp3", "action": "download"},
        ],
    )
    for flag in ("true", "True", "1"):
        actions = download(app, since=0, aggregated=flag)["actions"]
        assert [(a["episode"], a.get("position")) for a in actions] == [
            ("https://cdn.example.com/1.mp3", 50),
            ("https://cdn.example.com/2.mp3", None),
        ]
    assert len(download(app, aggregated="false")["actions"]) == 4
    assert_error(app.get(EPISODES, {"aggregated": "yes"}), 400)


def test_podcast_matches_any_spelling_of_the_feed(app, alice):
    sub = subscribe(alice, FEED)
    upload(
        app,
        [
            play(1, feed="HTTPS://Feeds.Example.com:443/show.xml/"),
            play(2, feed=FEED),
            play(3, feed="https://other.example.com/feed"),
        ],
    )
    # The feed moves; an app still on the old URL and one on the new reach the same actions.
    subscriptions.subscription_update(
        user=alice,
        guid=sub.guid,
        change=subscriptions.SubscriptionUpdate(new_feed_url="https://new.example.com/show"),
    )
    upload(app, [play(4, feed="https://new.example.com/show")])

    for spelling in (FEED, "https://feeds.example.com/show.xml/", "https://new.example.com/show"):
        actions = download(app, podcast=spelling)["actions"]
        assert [a["episode"][-5:] for a in actions] == ["1.mp3", "2.mp3", "4.mp3"], spelling
    other = download(app, podcast="https://other.example.com/feed")["actions"]
    assert [a["episode"][-5:] for a in other] == ["3.mp3"]
    assert_error(app.get(EPISODES, {"podcast": "mailto:x"}), 400)


def test_device_keeps_that_devices_actions(app, alice):
    upload(app, [play(1, device="phone"), play(2, device="laptop"), play(3)])
    assert [a["episode"][-5:] for a in download(app, device="phone")["actions"]] == ["1.mp3"]
    assert download(app, device="never-seen")["actions"] == []
    assert not Device.objects.filter(device_id="never-seen").exists()
    assert_error(app.get(EPISODES, {"device": "bad device"}), 400)


@pytest.mark.parametrize("plus", [0, 1])
def test_a_download_answers_everything_since_in_one_answer_and_apps_read_on_without_loss(
    app, alice, clock, plus
):
    """AntennaPod and gPodder read one answer per sync: a new phone learns a whole history in
    its first sync, not a thousand actions a sync."""
    start = clock.now.replace(microsecond=0) - timedelta(hours=1)
    seconds = [s for s in range(7) for _ in range(PER_SECOND)] + [7, 9, 9, 12]
    store_received(alice, seconds, start)

    first = download(app, since=0)

    episodes = [f"https://cdn.example.com/show/{i}.mp3" for i in range(len(seconds))]
    assert [a["episode"] for a in first["actions"]] == episodes  # in the order received
    # Sent back (AntennaPod) or plus one (Kasts), it finds none of them again, and what comes
    # later.
    since = first["timestamp"] + plus
    assert download(app, since=since)["actions"] == []
    upload(app, [play(1)])
    assert [a["episode"] for a in download(app, since=since)["actions"]] == [
        "https://cdn.example.com/1.mp3"
    ]


def test_a_download_of_many_pieces_is_one_json_answer_in_order(app, alice, clock):
    start = clock.now.replace(microsecond=0) - timedelta(days=1)
    store_received(alice, list(range(2_500)), start)
    store_received(alice, [2_500] * 7, start, first=2_500)  # one second, past a piece's end

    response = app.get(EPISODES, {"since": 0})

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert "no-store" in response["Cache-Control"]
    answer = json.loads(b"".join(response.streaming_content))
    assert [a["episode"] for a in answer["actions"]] == [
        f"https://cdn.example.com/show/{i}.mp3" for i in range(2_507)
    ]
    assert set(answer) == {"actions", "timestamp"}


def test_the_timestamp_of_a_download_lets_both_kinds_of_app_see_later_uploads(app, alice, clock):
    upload(app, [play(1)])
    answer = download(app)
    assert answer["timestamp"] < clock.now.timestamp()
    clock.advance(seconds=0.5)
    upload(app, [play(2)])
    for since in (answer["timestamp"], answer["timestamp"] + 1):
        assert "https://cdn.example.com/2.mp3" in [
            a["episode"] for a in download(app, since=since)["actions"]
        ]


def test_an_incremental_download_reads_the_same_queries_whatever_the_history(
    app, alice, clock, django_assert_max_num_queries
):
    start = clock.now.replace(microsecond=0) - timedelta(days=30)
    store_received(alice, list(range(0, 20_000)), start)
    app.get("/api/2/devices/alice.json")  # the session exists
    # Basic, the session, the lock with the latest second, the first piece, and the
    # savepoint's two.
    with django_assert_max_num_queries(6):
        answer = download(app, since=int(clock.now.timestamp()) - 60)
    assert answer["actions"] == []
    # A whole history: one query more per thousand actions read, from where the last ended.
    with django_assert_max_num_queries(7 + 20):
        assert len(download(app, since=0, podcast=FEED)["actions"]) == 20_000


# --- An upload's timestamp after a download --------------------------------------------------


def test_an_upload_after_a_download_answers_no_later_than_the_download(alice, clock, settings):
    """AntennaPod keeps an upload's timestamp as its next since: a later timestamp than its
    download's would skip what another app uploaded in between."""
    start = clock.now.replace(microsecond=0) - timedelta(hours=1)
    store_received(alice, [s for s in range(4) for _ in range(PER_SECOND)], start)
    phone = APIClient()  # AntennaPod: Basic once, then its cookies
    login = phone.post(
        "/api/2/auth/alice/login.json",
        b"",
        content_type="plain/text",
        HTTP_AUTHORIZATION=basic("alice"),
    )
    assert login.status_code == 200

    read = download(phone, since=0)
    assert len(read["actions"]) == 4 * PER_SECOND  # everything, in one answer
    clock.advance(seconds=5)
    # Another app uploads after the phone's download; then the phone uploads its own.
    kasts = APIClient()
    others = upload(kasts, [play(2)], HTTP_AUTHORIZATION=basic("alice"))
    answer = upload(phone, [play(1)])

    assert answer["timestamp"] == read["timestamp"]
    seen = [a["episode"] for a in download(phone, since=answer["timestamp"])["actions"]]
    assert "https://cdn.example.com/2.mp3" in seen
    # An app whose cookie did not come back (Kasts) is answered the upload's own timestamp.
    assert others["timestamp"] > read["timestamp"]


def test_a_remembered_download_counts_only_for_its_own_user_and_signed(app, alice, bob, clock):
    start = clock.now.replace(microsecond=0) - timedelta(hours=1)
    store_received(alice, [s for s in range(4) for _ in range(PER_SECOND)], start)
    alices_page = download(app, since=0)["timestamp"]
    clock.advance(seconds=3600)  # an hour later, bob's app uploads
    cookie = app.cookies["episodes_read_up_to"]
    assert cookie["path"] == "/api/2/episodes/"
    assert cookie["httponly"]
    assert cookie["samesite"] == "Lax"

    for value in (cookie.value, "0:forged", "garbage"):  # alice's, sent by bob's app; forged
        bobs = APIClient()
        bobs.cookies["episodes_read_up_to"] = value
        response = bobs.post(
            "/api/2/episodes/bob.json",
            json.dumps([play(1)]),
            content_type="application/json",
            HTTP_AUTHORIZATION=basic("bob"),
        )
        assert response.status_code == 200, response.content
        assert response.json()["timestamp"] > alices_page + 3000


def test_a_filtered_download_does_not_move_where_the_app_has_read_to(app, alice):
    download(app, podcast=FEED)
    download(app, device="phone")
    assert "episodes_read_up_to" not in app.cookies


def test_an_upload_of_actions_stored_already_answers_a_timestamp_later_uploads_come_after(
    app, alice, clock
):
    batch = [play(n, device="phone") for n in range(2 * PER_SECOND - 10)]
    upload(app, batch)
    # 30 new ones, then the first batch resent (its actions are stored already).
    answer = upload(app, [play(5000 + n) for n in range(30)] + batch)
    upload(app, [play(9000, device="tablet")])  # another device, in the same second

    for since in (answer["timestamp"], answer["timestamp"] + 1):
        episodes = [a["episode"] for a in download(app, since=since)["actions"]]
        assert "https://cdn.example.com/9000.mp3" in episodes


def test_deleting_the_newest_actions_does_not_let_later_ones_be_stamped_before_them(
    app, alice, clock
):
    """A web machine whose clock runs ahead stamps the newest actions; deleting the
    subscription they belong to must not move the received seconds back behind a timestamp
    already answered, where a machine whose clock is right would stamp the next ones."""
    sub = subscribe(alice, FEED)
    upload(app, [play(n, feed="https://kept.example.com/f") for n in range(400)])
    clock.advance(seconds=3)
    upload(app, [play(n) for n in range(2 * PER_SECOND)])  # three seconds ahead
    answer = download(app, since=int(clock.now.timestamp()) + 1)
    deletion = deletions.deletion_request(user=alice, guid=sub.guid)
    assert deletions.deletion_process(deletion_id=deletion.pk) == "SUCCESS"
    clock.advance(seconds=-3)

    upload(app, [play(9999, feed="https://kept.example.com/f")])

    for since in (answer["timestamp"], answer["timestamp"] + 1):
        episodes = [a["episode"] for a in download(app, since=since)["actions"]]
        assert "https://cdn.example.com/9999.mp3" in episodes


def test_a_device_deleted_by_staff_leaves_its_actions_without_a_device(app, alice):
    upload(app, [play(1, device="old-phone"), play(2, device="laptop")])
    Device.objects.get(device_id="old-phone").delete()
    assert [a.get("device") for a in download(app)["actions"]] == [None, "laptop"]


# --- One account, one set of data ------------------------------------------------------------


def test_another_users_actions_are_never_seen_and_their_path_is_a_401(app, alice, bob):
    bobs = basic_app("bob")
    bobs.post("/api/2/episodes/bob.json", json.dumps([play(1)]), content_type="application/json")

    assert download(app)["actions"] == []
    assert_error(app.get("/api/2/episodes/bob.json"), 401)
    response = app.post(
        "/api/2/episodes/bob.json", json.dumps([play(2)]), content_type="application/json"
    )
    assert_error(response, 401)
    assert EpisodeAction.objects.filter(user=alice).count() == 0
    assert_error(APIClient().get(EPISODES), 401)


def test_deleting_a_subscription_deletes_its_actions_by_any_spelling(app, alice):
    kept = subscribe(alice, "https://kept.example.com/feed")
    sub = subscribe(alice, FEED)
    subscriptions.subscription_update(
        user=alice,
        guid=sub.guid,
        change=subscriptions.SubscriptionUpdate(new_feed_url="https://new.example.com/show"),
    )
    upload(
        app,
        [
            play(1, feed=FEED),
            play(2, feed="http://FEEDS.example.com/show.xml/"),  # another key: not this feed
            play(3, feed="https://new.example.com/show"),
            play(4, feed="https://kept.example.com/feed"),
            play(5, feed="https://never-subscribed.example.com/feed"),
        ],
    )

    deletion = deletions.deletion_request(user=alice, guid=sub.guid)
    assert deletions.deletion_process(deletion_id=deletion.pk) == "SUCCESS"
    # Idempotent: a redelivered message finds the work done.
    assert deletions.deletion_process(deletion_id=deletion.pk) == "skipped"

    left = [a["episode"][-5:] for a in download(app)["actions"]]
    assert left == ["2.mp3", "4.mp3", "5.mp3"]
    assert kept.pk


def test_a_deletion_rolled_back_keeps_the_actions(app, alice, monkeypatch):
    sub = subscribe(alice, FEED)
    upload(app, [play(1)])
    deletion = deletions.deletion_request(user=alice, guid=sub.guid)

    def broken_finish(*args: Any) -> str:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(deletions, "_finish", broken_finish)
    with pytest.raises(RuntimeError):
        deletions.deletion_process(deletion_id=deletion.pk)
    assert EpisodeAction.objects.filter(user=alice).count() == 1


def test_actions_follow_a_merge_into_another_subscription(app, alice):
    old = subscribe(alice, FEED)
    new = subscribe(alice, "https://new.example.com/show")
    upload(app, [play(1, feed=FEED), play(2, feed="https://new.example.com/show")])
    # A feed check finds the old feed moved to the other's URL: the two become one.
    assert subscriptions.subscription_apply_feed_identity(
        user=alice,
        key_digest=feeds.feed_key_digest(FEED),
        guid=None,
        new_feed_url="https://new.example.com/show",
    )
    assert alice.subscriptions.count() == 1
    [survivor] = alice.subscriptions.all()
    assert survivor.pk in (old.pk, new.pk)

    for spelling in (FEED, "https://new.example.com/show"):
        actions = download(app, podcast=spelling)["actions"]
        assert [a["episode"][-5:] for a in actions] == ["1.mp3", "2.mp3"]
    deletion = deletions.deletion_request(user=alice, guid=survivor.guid)
    deletions.deletion_process(deletion_id=deletion.pk)
    assert not EpisodeAction.objects.exists()


def test_a_deleted_user_takes_their_actions(app, alice):
    upload(app, [play(1, device="phone")])
    alice.delete()
    assert not EpisodeAction.objects.exists()
