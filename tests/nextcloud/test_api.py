"""The Nextcloud gPodder Sync API's four data paths (docs/nextcloud.md): paths, Basic, the
subscription and episode action rules, devices, errors and query counts."""

import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.sessions.models import Session
from rest_framework.test import APIClient

from accounts.services import app_password_revoke
from episodes.models import EpisodeAction
from gpodder.models import Device
from nextcloud.models import ActionsRead
from nextcloud.services import device_id_for
from subscriptions.models import Subscription
from tests.episodes.helpers import store_received
from tests.helpers import Clock, assert_error, basic, subscribe
from tests.nextcloud.helpers import APP, app_password, body, nextcloud_client

FEED = "https://feeds.example.com/show.xml"


def play(n: int, **fields: Any) -> dict[str, Any]:
    return {
        "podcast": FEED,
        "episode": f"https://cdn.example.com/show/{n}.mp3",
        "action": "play",
        "timestamp": "2024-05-01T10:30:00",
        "started": 0,
        "position": 10 + n,
        "total": 3600,
        **fields,
    }


def post_json(client: APIClient, path: str, data: Any, **extra: Any) -> Any:
    content_type = extra.pop("content_type", "application/json")
    return client.post(path, data=json.dumps(data), content_type=content_type, **extra)


# --- paths ------------------------------------------------------------------------------

PREFIXES = [
    "/index.php/apps/gpoddersync",
    "/apps/gpoddersync",
    "http://testserver//index.php/apps/gpoddersync",  # Kasts, a server address ending in /
]


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("slash", ["", "/"])
def test_every_path_answers_with_or_without_index_php_and_slash_and_never_redirects(
    nc: APIClient, alice: Any, prefix: str, slash: str
) -> None:
    got = nc.get(f"{prefix}/subscriptions{slash}", {"since": 0})
    assert got.status_code == 200, got.content
    changed = post_json(nc, f"{prefix}/subscription_change/create{slash}", {"add": [FEED]})
    assert changed.status_code == 200, changed.content
    created = post_json(nc, f"{prefix}/episode_action/create{slash}", [play(1)])
    assert created.status_code == 200, created.content
    actions = nc.get(f"{prefix}/episode_action{slash}", {"since": 0})
    assert actions.status_code == 200
    assert [a["episode"] for a in body(actions)["actions"]] == [play(1)["episode"]]
    assert Subscription.objects.filter(user=alice, is_subscribed=True).count() == 1


def test_a_doubled_slash_keeps_the_api_rules(nc: APIClient) -> None:
    response = nc.get("http://testserver//index.php/apps/gpoddersync/subscriptions?since=x")
    assert_error(response, 400)
    assert response["Cache-Control"] == "no-store"


def test_an_unknown_path_under_index_php_is_the_404_error_object(nc: APIClient) -> None:
    assert_error(nc.get(f"{APP}/nothing"), 404)


def test_every_answer_is_json_and_no_store_errors_included(nc: APIClient) -> None:
    answers = [
        nc.get(f"{APP}/subscriptions"),
        nc.get(f"{APP}/episode_action"),
        post_json(nc, f"{APP}/episode_action/create", []),
        post_json(nc, f"{APP}/subscription_change/create", {"add": [], "remove": []}),
        nc.get(f"{APP}/subscriptions?since=-1"),
        APIClient().get(f"{APP}/subscriptions"),
    ]
    for response in answers:
        assert response["Cache-Control"] == "no-store"
        assert response["Content-Type"].startswith("application/json")
        body(response)  # JSON


def test_no_csrf_and_any_content_type(nc: APIClient, alice: Any) -> None:
    nc_csrf = nextcloud_client("alice")
    nc_csrf.handler.enforce_csrf_checks = True
    for content_type in ("text/plain", "application/x-www-form-urlencoded", "plain/text"):
        response = post_json(
            nc_csrf, f"{APP}/episode_action/create", [play(1)], content_type=content_type
        )
        assert response.status_code == 200, response.content
    assert EpisodeAction.objects.filter(user=alice).count() == 1


# --- Basic --------------------------------------------------------------------------------


def test_no_credentials_is_401_with_the_error_object_and_basic(alice: Any) -> None:
    for response in (
        APIClient().get(f"{APP}/subscriptions"),
        post_json(nextcloud_client("alice", "wrong"), f"{APP}/episode_action/create", []),
    ):
        assert_error(response, 401)
        assert response["WWW-Authenticate"].startswith("Basic realm=")


def test_a_bearer_token_or_a_session_does_not_open_them(alice: Any) -> None:
    client = APIClient()
    client.force_login(alice)
    assert_error(client.get(f"{APP}/subscriptions"), 401)


def test_latin1_credentials_are_read(db: None) -> None:
    from tests.factories import UserFactory

    UserFactory(username="jörg", with_password="pässwörd")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=basic("jörg", "pässwörd", encoding="latin-1"))
    assert client.get(f"{APP}/subscriptions").status_code == 200
    client.credentials(HTTP_AUTHORIZATION=basic("jörg", "pässwörd"))
    assert client.get(f"{APP}/subscriptions").status_code == 200


def test_no_cookie_is_set_and_no_session_written(nc: APIClient) -> None:
    for response in (
        nc.get(f"{APP}/subscriptions"),
        post_json(nc, f"{APP}/episode_action/create", [play(1)]),
    ):
        assert not response.cookies
    assert not Session.objects.exists()


def test_failed_basic_logins_are_throttled_with_the_other_surfaces(alice: Any) -> None:
    wrong = nextcloud_client("alice", "wrong")
    statuses = [wrong.get(f"{APP}/subscriptions").status_code for _ in range(12)]
    assert statuses[:10] == [401] * 10
    assert statuses[10:] == [429, 429]
    # The right password is refused too while the block lasts, here and on /api/2/.
    assert_error(nextcloud_client("alice").get(f"{APP}/subscriptions"), 429)
    api2 = APIClient()
    api2.credentials(HTTP_AUTHORIZATION=basic("alice"))
    assert api2.post("/api/2/auth/alice/login.json").status_code == 429


def test_a_revoked_app_password_is_refused_at_once(alice: Any) -> None:
    password_id, secret = app_password(alice, "AntennaPod")
    app = nextcloud_client("alice", secret)
    assert app.get(f"{APP}/subscriptions").status_code == 200  # now remembered
    app_password_revoke(user=alice, app_password_id=password_id)
    assert_error(app.get(f"{APP}/subscriptions"), 401)
    assert_error(post_json(app, f"{APP}/episode_action/create", [play(1)]), 401)


# --- since --------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["subscriptions", "episode_action"])
@pytest.mark.parametrize("since", ["-1", "x", "1.5", "1234567890123", "", "١٢", "0x10"])
def test_a_bad_since_is_a_400_naming_it(nc: APIClient, path: str, since: str) -> None:
    found = assert_error(nc.get(f"{APP}/{path}", {"since": since}), 400)
    assert "since" in found["errors"]


@pytest.mark.parametrize("path", ["subscriptions", "episode_action"])
def test_a_missing_since_is_zero(nc: APIClient, alice: Any, path: str) -> None:
    subscribe(alice, FEED)
    store_received(alice, [0], datetime.now(UTC) - timedelta(days=1))
    answer = body(nc.get(f"{APP}/{path}"))
    assert answer.get("add", answer.get("actions"))


# --- subscriptions ------------------------------------------------------------------------


def test_subscriptions_since_zero_never_lists_removed_feeds(nc: APIClient, alice: Any) -> None:
    post_json(nc, f"{APP}/subscription_change/create", {"add": [FEED, "https://b.example/f"]})
    post_json(nc, f"{APP}/subscription_change/create", {"remove": ["https://b.example/f"]})
    first = body(nc.get(f"{APP}/subscriptions", {"since": 0}))
    assert first["add"] == [FEED]
    assert first["remove"] == []
    assert isinstance(first["timestamp"], int)
    later = body(nc.get(f"{APP}/subscriptions", {"since": 1}))
    assert later["remove"] == ["https://b.example/f"]


def test_subscriptions_since_t_and_t_plus_one_miss_nothing(nc: APIClient, alice: Any) -> None:
    answer = body(nc.get(f"{APP}/subscriptions", {"since": 0}))
    subscribe(alice, FEED)
    for since in (answer["timestamp"], answer["timestamp"] + 1):
        assert body(nc.get(f"{APP}/subscriptions", {"since": since}))["add"] == [FEED]


def test_subscriptions_answer_in_the_devices_own_spelling(alice: Any) -> None:
    subscribe(alice, "https://feeds.example.com/show.xml")
    _, secret = app_password(alice, "phone")
    phone = nextcloud_client("alice", secret)
    spelled = "https://FEEDS.example.com/show.xml"
    post_json(phone, f"{APP}/subscription_change/create", {"add": [spelled]})
    assert body(phone.get(f"{APP}/subscriptions", {"since": 0}))["add"] == [spelled]
    assert body(nextcloud_client("alice").get(f"{APP}/subscriptions"))["add"] == [
        "https://feeds.example.com/show.xml"
    ]


def test_subscription_change_answers_timestamp_and_update_urls(nc: APIClient, alice: Any) -> None:
    response = post_json(
        nc,
        f"{APP}/subscription_change/create",
        {"add": [FEED, "not a url", " https://padded.example/f "], "remove": []},
    )
    assert response.status_code == 200
    answer = body(response)
    assert set(answer) == {"timestamp", "update_urls"}
    assert isinstance(answer["timestamp"], int)
    assert ["not a url", ""] in answer["update_urls"]
    assert Subscription.objects.filter(user=alice, is_subscribed=True).count() == 2


def test_a_remove_unsubscribes(nc: APIClient, alice: Any) -> None:
    subscribe(alice, FEED)
    post_json(nc, f"{APP}/subscription_change/create", {"add": [], "remove": [FEED]})
    assert not Subscription.objects.get(user=alice).is_subscribed


def test_a_url_in_both_lists_is_a_400_and_nothing_changes(nc: APIClient, alice: Any) -> None:
    response = post_json(
        nc, f"{APP}/subscription_change/create", {"add": [FEED], "remove": [FEED + " "]}
    )
    assert_error(response, 400)
    assert not Subscription.objects.exists()


@pytest.mark.parametrize(
    "sent", [b"", b"[]", b"null", b'{"add": "x"}', b'{"add": [1]}', b"{", b'"x"']
)
def test_a_bad_subscription_change_is_a_400(nc: APIClient, sent: bytes) -> None:
    response = nc.post(
        f"{APP}/subscription_change/create", data=sent, content_type="application/json"
    )
    assert_error(response, 400)


def test_too_many_urls_is_a_400(nc: APIClient, settings: Any) -> None:
    settings.MAX_OPML_ENTRIES = 3
    urls = [f"https://e.example/{n}" for n in range(4)]
    assert_error(post_json(nc, f"{APP}/subscription_change/create", {"add": urls}), 400)


# --- episode actions: upload ----------------------------------------------------------------


def test_an_upload_stores_every_kind_in_any_case_and_time_form(nc: APIClient, alice: Any) -> None:
    sent = [
        play(1, action="PLAY", timestamp="2024-05-01T10:30:00"),
        {**play(2, timestamp="2024-05-01T10:30:00Z"), "action": "Play"},
        {
            "podcast": FEED,
            "episode": "e3",
            "action": "download",
            "timestamp": "2024-05-01T12:30:00+02:00",
        },
        {
            "podcast": FEED,
            "episode": "e4",
            "action": "DELETE",
            "timestamp": "2024-05-01T10:30:00.5",
        },
        {"podcast": FEED, "episode": "e5", "action": "new", "timestamp": "2024-05-01T10:30:00"},
    ]
    response = post_json(nc, f"{APP}/episode_action/create", sent)
    assert response.status_code == 200, response.content
    answer = body(response)
    assert set(answer) == {"timestamp"}
    assert isinstance(answer["timestamp"], int)
    stored = EpisodeAction.objects.filter(user=alice).order_by("id")
    assert [a.action for a in stored] == ["play", "play", "download", "delete", "new"]
    assert {a.timestamp for a in stored} == {datetime(2024, 5, 1, 10, 30, tzinfo=UTC)} | {
        datetime(2024, 5, 1, 10, 30, 0, 500000, tzinfo=UTC)
    }


@pytest.mark.parametrize("guid", [None, "", "null", "MISSING"])
def test_every_spelling_of_no_guid_is_no_guid(nc: APIClient, alice: Any, guid: Any) -> None:
    action = play(1) if guid == "MISSING" else play(1, guid=guid)
    assert post_json(nc, f"{APP}/episode_action/create", [action]).status_code == 200
    assert EpisodeAction.objects.get().guid == ""
    shown = body(nc.get(f"{APP}/episode_action"))["actions"][0]
    assert "guid" not in shown


def test_the_same_actions_sent_again_change_nothing(nc: APIClient, alice: Any) -> None:
    batch = [play(n, guid=f"g{n}") for n in range(30)]
    post_json(nc, f"{APP}/episode_action/create", batch)
    post_json(nc, f"{APP}/episode_action/create", batch)
    assert EpisodeAction.objects.filter(user=alice).count() == 30


def test_one_malformed_action_is_a_400_naming_its_index_and_nothing_is_stored(
    nc: APIClient,
) -> None:
    batch = [play(0), play(1), {**play(2), "position": "ten"}, play(3)]
    found = assert_error(post_json(nc, f"{APP}/episode_action/create", batch), 400)
    assert "action 2" in found["message"]
    assert "2" in found["errors"]
    assert not EpisodeAction.objects.exists()


@pytest.mark.parametrize(
    "sent", [b"", b"{}", b'{"actions": []}', b"null", b"[1]", b"[[]]", b"[", b'"x"']
)
def test_a_bad_action_upload_is_a_400(nc: APIClient, sent: bytes) -> None:
    response = nc.post(f"{APP}/episode_action/create", data=sent, content_type="application/json")
    assert_error(response, 400)
    assert not EpisodeAction.objects.exists()


def test_too_many_actions_is_a_400(nc: APIClient, settings: Any) -> None:
    settings.MAX_EPISODE_ACTIONS = 3
    assert_error(post_json(nc, f"{APP}/episode_action/create", [play(n) for n in range(4)]), 400)


def test_a_body_over_the_limit_is_a_413(nc: APIClient, settings: Any) -> None:
    settings.MAX_BODY_BYTES = 1000
    response = post_json(nc, f"{APP}/episode_action/create", [play(n) for n in range(50)])
    assert_error(response, 413)


# --- devices --------------------------------------------------------------------------------


def test_the_account_password_is_the_nextcloud_device(nc: APIClient, alice: Any) -> None:
    post_json(nc, f"{APP}/episode_action/create", [play(1)])
    assert EpisodeAction.objects.values_list("device__device_id", flat=True).get() == "nextcloud"


def test_each_app_password_is_a_device_named_after_it(alice: Any) -> None:
    _, pixel = app_password(alice, "AntennaPod")
    _, tablet = app_password(alice, "Kasts on my tablet")
    post_json(nextcloud_client("alice", pixel), f"{APP}/episode_action/create", [play(1)])
    post_json(nextcloud_client("alice", tablet), f"{APP}/episode_action/create", [play(2)])
    ids = set(Device.objects.filter(user=alice).values_list("device_id", flat=True))
    assert ids == {"AntennaPod", device_id_for("Kasts on my tablet")}
    assert device_id_for("Kasts on my tablet").startswith("Kasts-on-my-tablet-")
    api2 = APIClient()
    api2.credentials(HTTP_AUTHORIZATION=basic("alice"))
    listed = {d["id"] for d in api2.get("/api/2/devices/alice.json").json()}
    assert listed == ids


@pytest.mark.parametrize("name", ["nextcloud", "x" * 100, "ü", "a b", "a/b", "...."])
def test_a_device_id_made_of_any_name_is_valid_and_its_own(name: str) -> None:
    from gpodder.services import device_id_checked

    made = device_id_for(name)
    assert device_id_checked(made) == made
    assert made != "nextcloud"
    assert device_id_for(name + "!") != made


@pytest.mark.parametrize("device", ["", None])
def test_kasts_names_its_device_and_may_leave_it_empty(
    nc: APIClient, alice: Any, device: Any
) -> None:
    post_json(nc, f"{APP}/episode_action/create", [play(1, device="kasts-laptop")])
    post_json(nc, f"{APP}/episode_action/create", [play(2, device=device)])
    stored = EpisodeAction.objects.order_by("id").values_list("device__device_id", flat=True)
    assert list(stored) == ["kasts-laptop", "nextcloud"]


def test_the_device_limit_applies(alice: Any, settings: Any) -> None:
    settings.MAX_DEVICES = 1
    Device.objects.create(
        user=alice, device_id="other", created=datetime.now(UTC), last_used=datetime.now(UTC)
    )
    nc = nextcloud_client("alice")
    found = assert_error(nc.get(f"{APP}/subscriptions"), 400)
    assert "MAX_DEVICES" in found["message"]
    assert_error(post_json(nc, f"{APP}/episode_action/create", [play(1)]), 400)
    assert not EpisodeAction.objects.exists()


# --- episode actions: download --------------------------------------------------------------


def test_a_download_answers_every_action_in_one_answer(nc: APIClient, alice: Any) -> None:
    start = datetime.now(UTC) - timedelta(hours=1)
    store_received(alice, [n // 400 for n in range(2500)], start)
    before = int(time.time())
    response = nc.get(f"{APP}/episode_action", {"since": 0})
    assert response.streaming
    answer = body(response)
    assert len(answer["actions"]) == 2500
    assert before - 3 <= answer["timestamp"] <= int(time.time()) + 1
    assert answer["actions"][0] == {
        "podcast": "https://feeds.example.com/show.xml",
        "episode": "https://cdn.example.com/show/0.mp3",
        "action": "download",
        "timestamp": start.strftime("%Y-%m-%dT%H:%M:%S"),
    }


def test_a_download_shows_play_fields_as_integers_and_guid_when_known(
    nc: APIClient, alice: Any
) -> None:
    post_json(
        nc,
        f"{APP}/episode_action/create",
        [
            play(1, guid="urn:1", timestamp="2024-05-01T12:30:00.75+02:00"),
            {**play(2), "action": "new", "started": None, "position": None, "total": None},
        ],
    )
    actions = body(nc.get(f"{APP}/episode_action?since=0"))["actions"]
    assert actions[0] == {
        "podcast": FEED,
        "episode": "https://cdn.example.com/show/1.mp3",
        "action": "play",
        "timestamp": "2024-05-01T10:30:00",
        "guid": "urn:1",
        "started": 0,
        "position": 11,
        "total": 3600,
    }
    assert set(actions[1]) == {"podcast", "episode", "action", "timestamp"}


def test_a_download_counts_since_by_received_time(nc: APIClient, alice: Any) -> None:
    start = datetime.now(UTC) - timedelta(hours=1)
    store_received(alice, [0, 10, 20], start)
    since = int((start + timedelta(seconds=10)).timestamp())
    episodes = [
        a["episode"] for a in body(nc.get(f"{APP}/episode_action", {"since": since}))["actions"]
    ]
    assert episodes == [f"https://cdn.example.com/show/{n}.mp3" for n in (1, 2)]


def test_a_download_answers_from_where_the_devices_last_download_read(
    nc: APIClient, alice: Any
) -> None:
    first = body(nc.get(f"{APP}/episode_action", {"since": 0}))
    assert ActionsRead.objects.get().up_to == first["timestamp"]
    other = nextcloud_client("alice")
    other.credentials(HTTP_AUTHORIZATION=basic("alice"))
    # Another device uploads after the download; this one then sends a since of its own clock.
    _, secret = app_password(alice, "Kasts")
    post_json(nextcloud_client("alice", secret), f"{APP}/episode_action/create", [play(7)])
    later = body(nc.get(f"{APP}/episode_action", {"since": int(time.time()) + 60}))
    assert [a["episode"] for a in later["actions"]] == ["https://cdn.example.com/show/7.mp3"]


# --- query counts ---------------------------------------------------------------------------


@pytest.mark.postgresql
def test_queries_are_flat_in_the_number_of_actions_and_urls(
    nc: APIClient, alice: Any, django_assert_max_num_queries: Any, clock: Clock
) -> None:
    """Each path in as many queries for 1 action or URL as for 300 (and for a download of
    none as of 301): the counts below are what each takes, its device's sync event included
    (gpodder.diagnostics)."""
    nc.get(f"{APP}/subscriptions")  # the device made, the credentials remembered
    for n in (1, 300):
        with django_assert_max_num_queries(9):
            response = post_json(
                nc,
                f"{APP}/episode_action/create",
                [play(i, guid=f"{n}-{i}") for i in range(n)],
            )
        assert response.status_code == 200
    for n in (1, 300):
        urls = [f"https://e{n}.example/{i}" for i in range(n)]
        with django_assert_max_num_queries(17):
            response = post_json(nc, f"{APP}/subscription_change/create", {"add": urls})
        assert response.status_code == 200
    for since in (int(time.time()) + 100, 0):  # none, then 301 actions
        with django_assert_max_num_queries(9):
            answer = body(nc.get(f"{APP}/episode_action", {"since": since}))
    assert len(answer["actions"]) == 301
    # 301 feeds, then none: a pull answers from no later than where the device's last one read.
    clock.advance(seconds=10)
    with django_assert_max_num_queries(7):
        full = body(nc.get(f"{APP}/subscriptions", {"since": 0}))
    assert len(full["add"]) == 301
    with django_assert_max_num_queries(7):
        assert body(nc.get(f"{APP}/subscriptions", {"since": full["timestamp"]}))["add"] == []


@pytest.mark.parametrize(
    "path", ["/apps/gpoddersync/nothing", "/index.php/apps/gpoddersync/nothing", "/login/v2/x"]
)
def test_an_unknown_nextcloud_path_is_the_404_error_object(nc: APIClient, path: str) -> None:
    response = nc.get(path)
    assert_error(response, 404)
    assert response["Cache-Control"] in ("no-store", "private, no-store")


def test_an_unknown_page_is_still_the_html_404(db: None) -> None:
    response = APIClient().get("/no-such-page/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")


def test_an_upload_answers_no_later_than_where_the_devices_last_download_read(
    nc: APIClient, alice: Any, clock: Clock
) -> None:
    """Kasts keeps the upload's timestamp: what others uploaded after its download must not lie
    before it."""
    downloaded = body(nc.get(f"{APP}/episode_action?since=0"))["timestamp"]
    clock.advance(seconds=30)
    answered = body(post_json(nc, f"{APP}/episode_action/create", [play(1)]))["timestamp"]
    assert answered <= downloaded

    _, secret = app_password(alice, "Never downloaded")
    fresh = nextcloud_client("alice", secret)
    assert body(post_json(fresh, f"{APP}/episode_action/create", [play(2)]))["timestamp"] >= (
        downloaded + 30
    )


@pytest.mark.parametrize("path", ["/apps/gpoddersync/nothing", "/login/v2/x"])
def test_an_unknown_nextcloud_path_is_the_error_object_under_debug_too(
    nc: APIClient, settings: Any, path: str
) -> None:
    """`make run` runs with DEBUG on, where Django answers its own HTML page to a path that no
    pattern takes."""
    settings.DEBUG = True
    assert_error(nc.get(path), 404)
