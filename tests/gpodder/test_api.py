"""The gpodder.net API v2 over the same subscriptions (docs/gpodder-api.md): authentication,
devices, the advanced and simple subscription APIs, and both protocols on one account."""

import json
from typing import Any

import pytest
from django.contrib.auth import SESSION_KEY
from rest_framework.test import APIClient

from accounts.basic import credentials
from accounts.throttles import LoginThrottle
from gpodder.models import Device, DeviceFeed
from subscriptions.models import Subscription
from tests.helpers import PASSWORD, assert_error, basic, client_for, subscribe

SUBS = "/api/2/subscriptions/alice/phone.json"
REALM = 'Basic realm="opa-subscriptions"'


def pull(client: APIClient, since: int = 0, device: str = "phone") -> dict[str, Any]:
    response = client.get(f"/api/2/subscriptions/alice/{device}.json", {"since": since})
    assert response.status_code == 200, response.content
    return response.json()


def upload(client: APIClient, device: str = "phone", **changes: list[str]) -> dict[str, Any]:
    response = client.post(
        f"/api/2/subscriptions/alice/{device}.json",
        json.dumps(changes),
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    return response.json()


# --- Authentication ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/api/2/devices/alice.json",
        SUBS + "?since=0",
        "/api/2/sync-devices/alice.json",
        "/subscriptions/alice.json",
        "/subscriptions/alice/phone.txt",
    ],
)
def test_without_credentials_a_401_asks_for_basic_with_a_realm(alice, path):
    response = APIClient().get(path)
    assert_error(response, 401)
    assert response["WWW-Authenticate"] == REALM


def test_wrong_password_unknown_user_and_malformed_basic_are_401(alice):
    for header in (basic("alice", "wrong"), basic("nobody"), "Basic !!!", "Basic " + "YWxpY2U="):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=header)
        response = client.get("/api/2/devices/alice.json")
        assert_error(response, 401)
        assert response["WWW-Authenticate"] == REALM


def test_another_users_path_is_401_whether_or_not_that_user_exists(app, bob):
    for path in ("/api/2/devices/bob.json", "/api/2/devices/nobody.json"):
        response = app.get(path)
        assert_error(response, 401)
        assert response["WWW-Authenticate"] == REALM
    assert not Device.objects.exists()


def test_login_sets_a_session_cookie_that_alone_authenticates_even_a_post(alice):
    """AntennaPod: Basic on login.json only (an empty body labelled plain/text), then the cookie."""
    client = APIClient(enforce_csrf_checks=True)
    response = client.post(
        "/api/2/auth/alice/login.json",
        b"",
        content_type="plain/text",
        HTTP_AUTHORIZATION=basic("alice"),
    )
    assert response.status_code == 200
    assert response.content == b""
    cookie = response.cookies["sessionid"]
    assert cookie["httponly"]
    assert cookie["samesite"] == "Lax"
    assert cookie["path"] == "/"
    # The cookie alone, no CSRF token, on a write.
    assert upload(client, add=["https://podnews.net/rss"])["timestamp"]
    assert pull(client)["add"] == ["https://podnews.net/rss"]
    # Logged out: the cookie no longer does.
    assert client.post("/api/2/auth/alice/logout.json").status_code == 200
    assert_error(client.get("/api/2/devices/alice.json"), 401)


def test_any_successful_basic_request_sets_the_cookie(alice):
    client = APIClient()
    response = client.get("/api/2/devices/alice.json", HTTP_AUTHORIZATION=basic("alice"))
    assert response.status_code == 200
    assert "sessionid" in response.cookies
    assert client.get("/api/2/devices/alice.json").status_code == 200


def test_basic_on_every_request_checks_the_password_once(app, alice, django_assert_num_queries):
    """Kasts sends Basic on every request: the Argon2 check is not paid again, and no session
    is written again while the cookie comes back."""
    assert app.get("/api/2/devices/alice.json").status_code == 200
    # The session with its user's state (which the remembered credentials use too), the device
    # count, the devices.
    with django_assert_num_queries(3):
        assert app.get("/api/2/devices/alice.json").status_code == 200


def test_remembered_credentials_end_with_a_password_change_or_a_deactivation(alice):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=basic("alice"))
    assert client.get("/api/2/devices/alice.json").status_code == 200
    alice.set_password("a new password")
    alice.save()
    fresh = APIClient()
    fresh.credentials(HTTP_AUTHORIZATION=basic("alice"))
    assert_error(fresh.get("/api/2/devices/alice.json"), 401)
    # Another process that remembered the old password: its cache is not told, but the
    # password hash it was verified against is gone.
    credentials.remember("alice", PASSWORD, alice.__class__.objects.get(pk=alice.pk), None)
    credentials._cache()[next(iter(credentials._cache()))] = (alice.pk, b"stale", None)
    assert_error(fresh.get("/api/2/devices/alice.json"), 401)

    alice.set_password(PASSWORD)
    alice.save()
    assert fresh.get("/api/2/devices/alice.json").status_code == 200
    alice.__class__.objects.filter(pk=alice.pk).update(is_active=False)  # no signal
    assert_error(APIClient(HTTP_AUTHORIZATION=basic("alice")).get("/api/2/devices/alice.json"), 401)


def test_failed_basic_authentications_count_against_the_login_throttle(alice, monkeypatch):
    monkeypatch.setattr(LoginThrottle, "THROTTLE_RATES", {"user": "1000/min", "login": "3/min"})
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=basic("alice", "guess"))
    for _ in range(3):
        assert_error(client.get("/api/2/devices/alice.json"), 401)
    response = client.get("/api/2/devices/alice.json")
    body = assert_error(response, 429)
    assert "login attempts per address and username" in body["message"]
    assert int(response["Retry-After"]) > 0
    # The right password is refused too while the window lasts: guessing gains nothing.
    client.credentials(HTTP_AUTHORIZATION=basic("alice"))
    assert_error(client.get("/api/2/devices/alice.json"), 429)
    # Another user's attempts from the same address are counted apart.
    assert_error(
        APIClient(HTTP_AUTHORIZATION=basic("bob", "guess")).get("/api/2/devices/bob.json"), 401
    )


# --- Devices -----------------------------------------------------------------------------------


def test_a_device_is_created_on_first_use_and_listed_with_the_subscription_count(app, alice):
    subscribe(alice, "https://podnews.net/rss")
    pull(app, device="kasts")
    assert app.get("/api/2/devices/alice.json").json() == [
        {"id": "kasts", "caption": "", "type": "other", "subscriptions": 1}
    ]
    device = Device.objects.get()
    assert device.last_used >= device.created


def test_device_settings_answer_an_empty_200_and_change_only_what_was_sent(app):
    path = "/api/2/devices/alice/n900.json"
    response = app.post(path, {"caption": "Phone", "type": "mobile"}, format="json")
    assert (response.status_code, response.content) == (200, b"")
    app.post(path, {"caption": "Pocket"}, format="json")
    # mygpoclient's label: a JSON body sent as a form.
    app.post(path, b'{"type": "laptop"}', content_type="application/x-www-form-urlencoded")
    assert app.get("/api/2/devices/alice.json").json() == [
        {"id": "n900", "caption": "Pocket", "type": "laptop", "subscriptions": 0}
    ]


@pytest.mark.parametrize(
    "body",
    [
        {"type": "phone"},
        {"type": 5},
        {"caption": None},
        {"caption": "x" * 256},
        [],
        "caption",
    ],
)
def test_bad_device_settings_are_400_and_change_nothing(app, body):
    assert_error(app.post("/api/2/devices/alice/n900.json", body, format="json"), 400)
    assert not Device.objects.exists()


@pytest.mark.parametrize(
    "caption",
    ["bell\x07", "\x1b[2J", "two\nlines", "tab\there", "del\x7f", "next\x85line", "\ud800"],
)
def test_a_caption_with_control_characters_is_a_400_naming_it_and_stores_nothing(app, caption):
    """As the devices page refuses it (docs/web.md, "Security"): Unicode's control characters
    and the lone surrogates JSON can carry."""
    path = "/api/2/devices/alice/n900.json"
    body = json.dumps({"caption": caption, "type": "mobile"})  # \ud800 escaped, as JSON may
    told = assert_error(app.post(path, body, content_type="application/json"), 400)
    assert "caption" in told["message"]
    assert "caption" in told["errors"]
    assert not Device.objects.exists()

    app.post(path, {"caption": "Phone"}, format="json")
    assert_error(app.post(path, body, content_type="application/json"), 400)
    device = Device.objects.get()
    assert (device.caption, device.type) == ("Phone", "other")


def test_a_caption_may_hold_any_other_character(app):
    # An apostrophe, emoji and a joiner, a right-to-left override, Hebrew: none a control.
    caption = "Téléphone 📱 d\u2019Alice 👩\u200d💻 \u202e\u05d1\u05d3\u05d9\u05e7\u05d4"
    path = "/api/2/devices/alice/n900.json"
    assert app.post(path, {"caption": caption}, format="json").status_code == 200
    assert Device.objects.get().caption == caption


@pytest.mark.parametrize("device", ["a" * 65, "with space", "ünï", "semi;colon", "%00"])
def test_a_device_id_outside_letters_digits_dot_dash_underscore_is_400(app, device):
    body = assert_error(app.get(f"/api/2/subscriptions/alice/{device}.json?since=0"), 400)
    assert "device" in body["message"]
    assert not Device.objects.exists()


def test_every_device_is_in_one_sync_group(app):
    for device in ("b", "a"):
        pull(app, device=device)
    expected = {"synchronized": [["a", "b"]], "not-synchronized": []}
    assert app.get("/api/2/sync-devices/alice.json").json() == expected
    assert app.post("/api/2/sync-devices/alice.json", {}, format="json").json() == expected


# --- Subscriptions: the advanced API -----------------------------------------------------------


def test_an_upload_answers_timestamp_and_update_urls_even_when_empty(app):
    answer = upload(app, add=["https://podnews.net/rss"])
    assert set(answer) == {"timestamp", "update_urls"}
    assert answer["update_urls"] == []
    assert isinstance(answer["timestamp"], int)


@pytest.mark.parametrize(
    "content_type",
    ["application/json", "application/x-www-form-urlencoded", "plain/text; charset=utf-8"],
)
def test_an_upload_with_no_body_is_a_400_that_makes_nothing(app, alice, content_type):
    """A client whose body was lost must not be told it uploaded; not even the device is made."""
    response = app.post(SUBS, b"", content_type=content_type)
    body = assert_error(response, 400)
    assert "the body is empty" in body["message"]
    assert not Device.objects.exists()
    assert not Subscription.objects.exists()


def test_an_upload_of_an_empty_object_changes_nothing_and_is_answered(app, alice):
    """`{}` is a body (no adds, no removes), unlike no body at all."""
    answer = upload(app)
    assert answer["update_urls"] == []
    assert not Subscription.objects.exists()


def test_an_upload_answers_no_later_than_the_pull_when_others_changed_in_between(app, alice, clock):
    """AntennaPod keeps the upload's timestamp as its next `since`: what another device changed
    between its pull and its upload must still reach its next pull, and with `since` + 1."""
    pulled = pull(app)
    clock.advance(seconds=3)
    upload(app, device="laptop", add=["https://example.com/laptop.xml"])
    clock.advance(seconds=5)
    answer = upload(app, add=["https://example.com/phone.xml"])
    assert answer["timestamp"] <= pulled["timestamp"]
    for since in (answer["timestamp"], answer["timestamp"] + 1):
        assert "https://example.com/laptop.xml" in pull(app, since=since)["add"]


def test_an_upload_after_a_pull_with_nothing_changed_in_between_answers_its_own_time(
    app, alice, clock
):
    """The window closes only when something changed after the pull: else the upload's
    timestamp moves on, as before."""
    upload(app, device="laptop", add=["https://example.com/laptop.xml"])
    clock.advance(seconds=10)
    pulled = pull(app)
    clock.advance(seconds=10)
    answer = upload(app, add=["https://example.com/phone.xml"])
    assert answer["timestamp"] > pulled["timestamp"] + 5
    # A device that never pulled is answered the upload's own time too.
    assert upload(app, device="new", add=["https://example.com/new.xml"])["timestamp"] > (
        pulled["timestamp"] + 5
    )


def test_one_device_adds_and_another_pulls_then_a_remove_unsubscribes(app, alice):
    upload(app, device="laptop", add=["https://podnews.net/rss", "https://example.com/a.xml"])
    first = pull(app)
    assert sorted(first["add"]) == ["https://example.com/a.xml", "https://podnews.net/rss"]
    upload(app, device="laptop", remove=["https://podnews.net/rss"])
    changes = pull(app, since=first["timestamp"])
    assert changes["remove"] == ["https://podnews.net/rss"]
    sub = Subscription.objects.get(feed_url="https://podnews.net/rss")
    assert (sub.is_subscribed, sub.deleted) == (False, None)  # a remove is not a deletion


def test_sanitising_is_reported_and_one_bad_url_never_fails_the_others(app):
    answer = upload(
        app,
        add=[
            "  https://podnews.net/rss\n",
            "itpc://example.com/itpc.xml",
            "ITMS://example.com/itms.xml",
            "example.com/bare.xml",
            "ftp://example.com/x",
            "https://",
            "https://example.com/" + "x" * 2048,
            "https://example.com/ok.xml",
        ],
    )
    assert answer["update_urls"] == [
        ["  https://podnews.net/rss\n", "https://podnews.net/rss"],
        ["itpc://example.com/itpc.xml", "http://example.com/itpc.xml"],
        ["ITMS://example.com/itms.xml", "http://example.com/itms.xml"],
        ["example.com/bare.xml", "http://example.com/bare.xml"],
        ["ftp://example.com/x", ""],
        ["https://", ""],
        ["https://example.com/" + "x" * 2048, ""],
    ]
    assert sorted(Subscription.objects.values_list("feed_url", flat=True)) == [
        "http://example.com/bare.xml",
        "http://example.com/itms.xml",
        "http://example.com/itpc.xml",
        "https://example.com/ok.xml",
        "https://podnews.net/rss",
    ]


def test_each_device_is_answered_in_its_own_spelling(app, alice):
    upload(app, device="a", add=["https://Example.com/feed/"])
    upload(app, device="b", add=["https://example.com:443/feed"])
    assert Subscription.objects.count() == 1  # variants of one feed
    assert pull(app, device="a")["add"] == ["https://Example.com/feed/"]
    assert pull(app, device="b")["add"] == ["https://example.com:443/feed"]
    # A device that never sent it gets the subscription's URL.
    assert pull(app, device="c")["add"] == ["https://Example.com/feed/"]
    assert app.get("/subscriptions/alice/b.txt").content == b"https://example.com:443/feed\n"


def test_both_protocols_see_one_list(app, alice, django_capture_on_commit_callbacks):
    opa = client_for(alice)
    added = opa.post(
        "/v1/subscriptions",
        {"subscriptions": [{"feed_url": "https://podnews.net/rss"}]},
        format="json",
    ).json()["success"][0]
    assert pull(app)["add"] == ["https://podnews.net/rss"]
    # A device's remove is is_subscribed false on /v1/.
    upload(app, remove=["https://podnews.net/rss"])
    assert opa.get(f"/v1/subscriptions/{added['guid']}").json()["is_subscribed"] is False
    # A device's variant of an OPA URL makes no new subscription and comes back as it spelled it.
    upload(app, add=["https://PODNEWS.net/rss/"])
    assert opa.get("/v1/subscriptions").json()["total"] == 1
    assert opa.get(f"/v1/subscriptions/{added['guid']}").json()["feed_url"] == (
        "https://podnews.net/rss"
    )
    assert pull(app)["add"] == ["https://PODNEWS.net/rss/"]
    # Deleted on /v1/: a device pulls it as removed.
    with django_capture_on_commit_callbacks(execute=True):  # the deletion runs in-process
        assert opa.delete(f"/v1/subscriptions/{added['guid']}").status_code == 202
    assert pull(app)["remove"] == ["https://PODNEWS.net/rss/"]


def test_a_move_the_service_found_keeps_the_devices_spelling_and_is_reported_when_sent(app, alice):
    upload(app, add=["https://old.example.com/feed"])
    opa = client_for(alice)
    guid = opa.get("/v1/subscriptions").json()["subscriptions"][0]["guid"]
    opa.patch(
        f"/v1/subscriptions/{guid}", {"new_feed_url": "https://new.example.com/feed"}, format="json"
    )
    changes = pull(app)
    assert changes["add"] == ["https://old.example.com/feed"]  # never remove + add
    assert changes["remove"] == []
    answer = upload(app, add=["https://old.example.com/feed"])
    assert answer["update_urls"] == [
        ["https://old.example.com/feed", "https://new.example.com/feed"]
    ]
    assert Subscription.objects.get().feed_url == "https://new.example.com/feed"


def test_a_timestamp_sent_back_as_is_or_plus_one_misses_no_change(app, alice, clock):
    clock.now = clock.now.replace(microsecond=0)
    first = pull(app)
    for step in range(4):
        clock.advance(milliseconds=400)  # several changes a second, some in the pull's second
        upload(app, device="other", add=[f"https://example.com/{step}.xml"])
        for since in (first["timestamp"], first["timestamp"] + 1):
            assert f"https://example.com/{step}.xml" in pull(app, since=since)["add"]
        first = pull(app, since=first["timestamp"] + step % 2)


@pytest.mark.parametrize(
    "query",
    ["", "since=", "since=-1", "since=1.5", "since=abc", "since=١٢", "since=99999999999999"],
)
def test_since_must_be_whole_non_negative_seconds(app, query):
    body = assert_error(app.get(f"{SUBS}?{query}"), 400)
    assert "since" in body["message"]


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[]",
        b'{"add": "https://podnews.net/rss"}',
        b'{"add": [5]}',
        b'{"add": [null]}',
        b'{"add": ["https://a.example/x"], "remove": ["https://a.example/x"]}',
        b"[" * 100_000,
    ],
)
def test_bad_uploads_are_400_and_store_nothing(app, body):
    response = app.post(SUBS, body, content_type="application/json")
    assert_error(response, 400)
    assert not Subscription.objects.exists()
    assert not DeviceFeed.objects.exists()


def test_an_upload_of_more_urls_than_the_limit_is_400_naming_it(app, settings):
    settings.MAX_OPML_ENTRIES = 10
    body = assert_error(
        app.post(SUBS, {"add": [f"https://e.example/{i}" for i in range(11)]}, format="json"), 400
    )
    assert "at most 10" in body["message"]


def test_a_body_over_the_limit_is_413(app):
    response = app.post(SUBS, b"[" + b" " * (1024 * 1024) + b"]", content_type="application/json")
    assert_error(response, 413)


@pytest.mark.postgresql
def test_an_upload_of_5000_urls_is_one_transaction_of_constant_queries(
    app, alice, django_assert_max_num_queries
):
    app.get("/api/2/devices/alice.json")  # the session exists
    urls = [f"https://feeds.example.com/{i}/ünï" for i in range(5000)]
    with django_assert_max_num_queries(22):  # the device's creation among them
        answer = upload(app, add=urls)
    assert answer["update_urls"] == []
    assert Subscription.objects.count() == 5000
    with django_assert_max_num_queries(8):
        assert len(pull(app)["add"]) == 5000


# --- Subscriptions: the simple API ------------------------------------------------------------


def test_the_simple_api_in_each_format(app, alice):
    put = app.put(
        "/subscriptions/alice/phone.txt",
        b"https://podnews.net/rss\n\n  https://example.com/a.xml  \n",
        content_type="text/plain",
    )
    assert (put.status_code, put.content) == (200, b"")
    assert sorted(app.get("/subscriptions/alice.json").json()) == [
        "https://example.com/a.xml",
        "https://podnews.net/rss",
    ]
    opml = app.get("/subscriptions/alice/phone.opml")
    assert opml["Content-Type"].startswith("text/x-opml")
    assert b'xmlUrl="https://podnews.net/rss"' in opml.content
    put = app.put(
        "/subscriptions/alice/phone.opml",
        b'<opml version="2.0"><body><outline text="a" xmlUrl="https://example.com/a.xml"/></body></opml>',
        content_type="text/x-opml",
    )
    assert put.status_code == 200
    assert app.get("/subscriptions/alice/phone.txt").content == b"https://example.com/a.xml\n"
    assert (
        app.put(
            "/subscriptions/alice/phone.json", b"[]", content_type="application/json"
        ).status_code
        == 200
    )
    assert app.get("/subscriptions/alice/phone.json").json() == []
    assert Subscription.objects.filter(is_subscribed=False).count() == 2


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/subscriptions/alice/phone.json", b'{"a": 1}'),
        ("/subscriptions/alice/phone.json", b"[1]"),
        ("/subscriptions/alice/phone.json", b"nope"),
        ("/subscriptions/alice/phone.txt", b"\xff\xfe"),
        ("/subscriptions/alice/phone.opml", b"<html/>"),
        ("/subscriptions/alice/phone.opml", b'<!DOCTYPE x [<!ENTITY a "b">]><opml/>'),
    ],
)
def test_bad_simple_puts_are_400_and_store_nothing(app, path, body):
    assert_error(app.put(path, body, content_type="text/plain"), 400)
    assert not Subscription.objects.exists()


def test_unknown_gpodder_paths_are_404_error_objects(app):
    for path in ("/api/2/nothing", "/api/2/devices/alice", "/subscriptions/alice.xml"):
        assert_error(app.get(path), 404)


def test_capabilities_name_the_gpodder_api():
    assert APIClient().get("/v1/capabilities").json()["urn:opa:extra:gpodder"] == {
        "2": {"status": "STABLE", "root": "/api/2"}
    }


def test_the_session_is_not_written_again_while_the_cookie_comes_back(app, alice):
    app.get("/api/2/devices/alice.json")
    key = app.cookies["sessionid"].value
    app.get("/api/2/devices/alice.json")
    assert app.cookies["sessionid"].value == key
    from django.contrib.sessions.models import Session

    assert Session.objects.get(session_key=key).get_decoded()[SESSION_KEY] == str(alice.pk)


def test_basic_on_every_request_without_cookies_checks_the_password_once(alice, monkeypatch):
    """Kasts' worst case: Basic every time and no cookie kept. Logging in each time (which saves
    the user's last_login) must not forget the verified credentials, nor count login attempts."""
    from accounts import services

    checks: list[str] = []
    real = services.authenticate

    def counted(*args: Any, **kwargs: Any) -> Any:
        checks.append(kwargs["username"])
        return real(*args, **kwargs)

    monkeypatch.setattr(services, "authenticate", counted)
    monkeypatch.setattr(LoginThrottle, "THROTTLE_RATES", {"user": "1000/min", "login": "3/min"})
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=basic("alice"))
    for _ in range(12):
        client.cookies.clear()
        assert client.get("/api/2/devices/alice.json").status_code == 200
    assert len(checks) == 1


def test_a_sync_round_reads_its_device_without_writing_it(app, alice, clock):
    pull(app)
    device = Device.objects.get()
    clock.advance(seconds=30)
    pull(app)
    assert Device.objects.get().last_used == device.last_used
    clock.advance(seconds=31)
    pull(app)
    assert Device.objects.get().last_used == clock.now


# --- From review: nothing stored by a refused request, and what a sync must leave alone --------


def test_a_refused_upload_creates_no_device_and_a_foreign_path_sets_no_cookie(app, bob, settings):
    settings.MAX_OPML_ENTRIES = 2
    both = {"add": ["feed://a.example/x"], "remove": ["http://a.example/x/"]}  # one feed
    assert_error(app.post(SUBS, both, format="json"), 400)
    assert_error(
        app.post(
            SUBS,
            {"add": ["https://a.example/1", "https://a.example/2", "https://a.example/3"]},
            format="json",
        ),
        400,
    )
    assert_error(app.put("/subscriptions/alice/phone.txt", b"", content_type="text/plain"), 400)
    assert not Device.objects.exists()
    client = APIClient()
    response = client.get("/api/2/devices/bob.json", HTTP_AUTHORIZATION=basic("alice"))
    assert_error(response, 401)
    assert "sessionid" not in response.cookies


def test_successful_basic_checks_do_not_count_against_the_login_throttle(alice, monkeypatch):
    monkeypatch.setattr(LoginThrottle, "THROTTLE_RATES", {"user": "1000/min", "login": "3/min"})
    for _ in range(6):
        credentials.clear()  # a check each time, as in a process that never saw the app
        response = APIClient(HTTP_AUTHORIZATION=basic("alice")).get("/api/2/devices/alice.json")
        assert response.status_code == 200


def test_a_sync_leaves_already_current_subscriptions_unchanged(app, alice, clock):
    sub = subscribe(alice, "https://podnews.net/rss")
    clock.advance(seconds=10)
    upload(app, add=["https://podnews.net/rss", "https://example.com/new.xml"])
    app.put(
        "/subscriptions/alice/phone.json",
        b'["https://podnews.net/rss"]',
        content_type="application/json",
    )
    sub.refresh_from_db()
    assert sub.is_subscribed
    assert sub.subscription_changed < clock.now  # not marked changed for every other device
    assert not Subscription.objects.get(feed_url="https://example.com/new.xml").is_subscribed


def test_a_url_a_device_was_answered_stays_its_spelling_after_a_move(app, alice):
    """AntennaPod never uploads what it pulled: the URL it was answered is the one it holds."""
    opa = client_for(alice)
    added = opa.post(
        "/v1/subscriptions",
        {"subscriptions": [{"feed_url": "https://old.example/feed"}]},
        format="json",
    ).json()["success"][0]
    assert pull(app)["add"] == ["https://old.example/feed"]
    opa.patch(
        f"/v1/subscriptions/{added['guid']}",
        {"new_feed_url": "https://new.example/feed"},
        format="json",
    )
    changes = pull(app)
    assert (changes["add"], changes["remove"]) == (["https://old.example/feed"], [])
    # A device that never saw it gets the current URL.
    assert pull(app, device="new")["add"] == ["https://new.example/feed"]


@pytest.mark.parametrize(
    "url", ["https:/example.com/feed", "feed://https://example.com/feed", "mailto:me@example.com"]
)
def test_a_scheme_without_its_slashes_is_not_made_a_host(app, url):
    assert upload(app, add=[url])["update_urls"] == [[url, ""]]
    assert not Subscription.objects.exists()


def test_a_host_and_port_without_a_scheme_is_read_as_http(app):
    answer = upload(app, add=["example.com:8080/feed"])
    assert answer["update_urls"] == [["example.com:8080/feed", "http://example.com:8080/feed"]]


def test_a_simple_put_reads_past_a_byte_order_mark(app):
    body = "\ufeffhttps://podnews.net/rss\n".encode()
    assert (
        app.put("/subscriptions/alice/phone.txt", body, content_type="text/plain").status_code
        == 200
    )
    assert list(Subscription.objects.values_list("feed_url", flat=True)) == [
        "https://podnews.net/rss"
    ]


def test_latin_1_basic_credentials_are_read(db):
    from tests.factories import UserFactory

    UserFactory(username="jörg", with_password="pässword")
    client = APIClient()
    token = __import__("base64").b64encode("jörg:pässword".encode("latin-1")).decode()
    response = client.get("/api/2/devices/jörg.json", HTTP_AUTHORIZATION=f"Basic {token}")
    assert response.status_code == 200


def test_a_400_names_the_field(app):
    body = assert_error(app.post(SUBS, {"add": [5]}, format="json"), 400)
    assert body["message"].startswith("Input could not be validated: add")


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/subscriptions/alice/phone.txt", "\ufeff".encode()),
        ("/subscriptions/alice/phone.txt", "\ufeff\n\n".encode()),
        ("/subscriptions/alice/phone.json", "\ufeff ".encode()),
    ],
)
def test_a_body_of_only_a_byte_order_mark_empties_nothing(app, alice, path, body):
    subscribe(alice, "https://podnews.net/rss")
    assert_error(app.put(path, body, content_type="text/plain"), 400)
    assert Subscription.objects.get().is_subscribed


def test_a_json_put_with_a_byte_order_mark_is_read(app):
    body = '\ufeff["https://podnews.net/rss"]'.encode()
    response = app.put("/subscriptions/alice/phone.json", body, content_type="application/json")
    assert response.status_code == 200
    assert list(Subscription.objects.values_list("feed_url", flat=True)) == [
        "https://podnews.net/rss"
    ]


def test_remembered_credentials_end_with_a_new_username(alice):
    client = APIClient(HTTP_AUTHORIZATION=basic("alice"))
    assert client.get("/api/2/devices/alice.json").status_code == 200
    type(alice).objects.filter(pk=alice.pk).update(username="alicia")  # no signal
    assert_error(APIClient(HTTP_AUTHORIZATION=basic("alice")).get("/api/2/devices/alice.json"), 401)


def test_a_url_a_device_got_from_the_simple_api_stays_its_spelling(app, alice):
    opa = client_for(alice)
    guid = opa.post(
        "/v1/subscriptions",
        {"subscriptions": [{"feed_url": "https://old.example/feed"}]},
        format="json",
    ).json()["success"][0]["guid"]
    assert app.get("/subscriptions/alice/phone.json").json() == ["https://old.example/feed"]
    opa.patch(
        f"/v1/subscriptions/{guid}", {"new_feed_url": "https://new.example/feed"}, format="json"
    )
    assert app.get("/subscriptions/alice/phone.json").json() == ["https://old.example/feed"]
    assert app.get("/subscriptions/alice.json").json() == ["https://new.example/feed"]


def test_basic_logins_work_while_the_shared_cache_is_away(alice, monkeypatch):
    """The login block lives in the shared cache (Redis): its failure is no 500."""
    import redis

    from accounts import throttles

    class Away:
        def get(self, *args: Any, **kwargs: Any) -> Any:
            raise redis.ConnectionError("away")

        set = get

    monkeypatch.setattr(throttles, "cache", Away())
    monkeypatch.setattr(LoginThrottle, "THROTTLE_RATES", {"user": "1000/min", "login": "1/min"})
    wrong = APIClient(HTTP_AUTHORIZATION=basic("alice", "wrong"))
    for _ in range(2):
        assert_error(wrong.get("/api/2/devices/alice.json"), 401)
    assert (
        APIClient(HTTP_AUTHORIZATION=basic("alice")).get("/api/2/devices/alice.json").status_code
        == 200
    )
