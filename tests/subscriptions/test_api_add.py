"""POST /v1/subscriptions against docs/api.md, "POST /v1/subscriptions", and its limits."""

import json
import re
import uuid
from datetime import timedelta

import jwt
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework_simplejwt.tokens import AccessToken

from api.throttles import UserThrottle
from subscriptions import feeds, selectors, services
from subscriptions.models import Subscription, SubscriptionFeed, SubscriptionGuid
from tests.helpers import client_for, nodes, plan_of

ADD = "/v1/subscriptions"
PODNEWS = "https://podnews.net/rss"
PODNEWS_GUID = "9b024349-ccf0-5f69-a609-6b82873eab3c"
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
INVALID = {"code": "405", "message": "Input could not be validated"}
UNAUTHORIZED = {"code": "401", "message": "User not authorized"}
# The most queries one add request may run, whatever its number of entries (docs/api.md).
MAX_ADD_QUERIES = 9

pytestmark = pytest.mark.django_db


def add(client, *entries):
    """POST the entries; a bare string stands for {"feed_url": it}."""
    body = [{"feed_url": e} if isinstance(e, str) else e for e in entries]
    return client.post(ADD, {"subscriptions": body}, format="json")


def add_one(client, feed_url, **fields):
    response = add(client, {"feed_url": feed_url, **fields})
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body.get("failure", []) == [], body
    [entry] = body["success"]
    return entry


def get(client, guid):
    return client.get(f"/v1/subscriptions/{guid}")


def stored_rows():
    return (
        Subscription.objects.count(),
        SubscriptionGuid.objects.count(),
        SubscriptionFeed.objects.count(),
    )


# --- adding -----------------------------------------------------------------------------------


def test_new_feed_is_added_subscribed_with_the_computed_guid(api, clock):
    response = add(api, PODNEWS)

    assert response.status_code == 200
    body = response.json()
    assert body["success"] == [
        {
            "feed_url": PODNEWS,
            "guid": PODNEWS_GUID,
            "is_subscribed": True,
            "subscription_changed": clock.stamp,
        }
    ]
    assert body.get("failure", []) == []
    read = get(api, PODNEWS_GUID).json()
    assert read["feed_url"] == PODNEWS
    assert read["is_subscribed"] is True
    assert read["subscription_changed"] == clock.stamp


def test_timestamps_are_rfc3339_utc_with_milliseconds_and_stored_truncated(api):
    entry = add_one(api, PODNEWS)

    assert TIMESTAMP.match(entry["subscription_changed"])
    stored = Subscription.objects.get().subscription_changed
    assert stored.microsecond % 1000 == 0
    assert get(api, PODNEWS_GUID).json()["subscription_changed"] == entry["subscription_changed"]


def test_feed_url_is_stored_as_sent_with_its_query(api):
    url = "HTTPS://Example.COM/Feeds/Show.xml?format=rss&token=AbC"

    entry = add_one(api, url)

    assert entry["feed_url"] == url
    assert get(api, entry["guid"]).json()["feed_url"] == url


def test_success_and_failure_come_back_together_in_one_200(api):
    response = add(api, "https://example.com/a", "example.com/b", "https://example.com/c")

    assert response.status_code == 200
    body = response.json()
    assert [s["feed_url"] for s in body["success"]] == [
        "https://example.com/a",
        "https://example.com/c",
    ]
    assert body["failure"] == [{"feed_url": "example.com/b", "message": "No protocol present"}]
    assert Subscription.objects.count() == 2


@pytest.mark.parametrize(
    ("feed_url", "message"),
    [
        ("podnews.net/rss", "No protocol present"),
        ("", "No protocol present"),
        ("ftp://podnews.net/rss", "Protocol must be http or https"),
        ("javascript://alert(1)", "Protocol must be http or https"),
        ("https://", "No host present"),
        ("https:///rss", "No host present"),
        ("https://podnews.net/r ss", "Feed URL contains whitespace, control or invalid characters"),
        (" https://podnews.net/rss", "Feed URL contains whitespace, control or invalid characters"),
        (
            "https://podnews.net/rss\n",
            "Feed URL contains whitespace, control or invalid characters",
        ),
        ("https://podnews.net/\x00", "Feed URL contains whitespace, control or invalid characters"),
        ("https://podnews.net/\x1b", "Feed URL contains whitespace, control or invalid characters"),
    ],
)
def test_bad_feed_url_is_a_per_entry_failure_naming_the_problem(api, feed_url, message):
    response = add(api, feed_url)

    assert response.status_code == 200
    body = response.json()
    assert body["failure"] == [{"feed_url": feed_url, "message": message}]
    assert body.get("success", []) == []
    assert stored_rows() == (0, 0, 0)


def test_lone_surrogate_in_feed_url_is_a_failure_not_a_crash(api):
    raw = '{"subscriptions": [{"feed_url": "https://podnews.net/\\ud800"}]}'

    response = api.post(ADD, raw, content_type="application/json")

    assert response.status_code == 200
    [failure] = response.json()["failure"]
    assert failure["message"] == "Feed URL contains whitespace, control or invalid characters"
    assert stored_rows() == (0, 0, 0)


@pytest.mark.parametrize(
    "guid", ["not-a-uuid", "", "9b024349-ccf0-5f69-a609", 12345, 1.5, True, ["x"], {"a": 1}]
)
def test_guid_that_is_not_a_uuid_is_a_per_entry_failure(api, guid):
    response = add(api, {"feed_url": PODNEWS, "guid": guid}, "https://example.com/ok")

    assert response.status_code == 200
    body = response.json()
    assert body["failure"] == [{"feed_url": PODNEWS, "message": "Invalid guid: not a UUID"}]
    assert [s["feed_url"] for s in body["success"]] == ["https://example.com/ok"]
    assert list(Subscription.objects.values_list("feed_url", flat=True)) == [
        "https://example.com/ok"
    ]


@pytest.mark.parametrize(
    "spelling",
    [
        "3F2504E0-4F89-11D3-9A0C-0305E82C3301",
        "{3f2504e0-4f89-11d3-9a0c-0305e82c3301}",
        "urn:uuid:3f2504e0-4f89-11d3-9a0c-0305e82c3301",
        "3f2504e04f8911d39a0c0305e82c3301",
    ],
)
def test_sent_guid_in_any_uuid_spelling_is_answered_lowercase_hyphenated(api, spelling):
    entry = add_one(api, PODNEWS, guid=spelling)

    assert entry["guid"] == "3f2504e0-4f89-11d3-9a0c-0305e82c3301"
    assert get(api, "3f2504e0-4f89-11d3-9a0c-0305e82c3301").status_code == 200


def test_sent_guid_is_used_instead_of_the_computed_one(api):
    guid = str(uuid.uuid4())

    entry = add_one(api, PODNEWS, guid=guid)

    assert entry["guid"] == guid
    assert get(api, guid).json()["feed_url"] == PODNEWS
    assert get(api, PODNEWS_GUID).status_code == 404


def test_duplicate_entries_give_one_subscription_and_a_success_each(api):
    response = add(api, PODNEWS, PODNEWS, PODNEWS)

    assert response.status_code == 200
    success = response.json()["success"]
    assert len(success) == 3
    assert {s["guid"] for s in success} == {PODNEWS_GUID}
    assert all(s["is_subscribed"] for s in success)
    assert Subscription.objects.count() == 1


def test_duplicate_variants_in_one_request_give_one_subscription(api):
    variants = [PODNEWS, "HTTPS://PODNEWS.NET/rss/", "https://podnews.net:443/rss"]

    response = add(api, *variants)

    success = response.json()["success"]
    assert len(success) == 3
    assert {s["guid"] for s in success} == {PODNEWS_GUID}
    assert Subscription.objects.count() == 1


def test_duplicate_entries_with_two_sent_guids_end_at_the_last_one(api):
    first, second = str(uuid.uuid4()), str(uuid.uuid4())

    response = add(api, {"feed_url": PODNEWS, "guid": first}, {"feed_url": PODNEWS, "guid": second})

    assert len(response.json()["success"]) == 2
    assert Subscription.objects.count() == 1
    # Entries are applied in order and a sent guid is authoritative: the second renames the first.
    assert get(api, first).json()["new_guid"] == second
    assert "new_guid" not in get(api, second).json()


@pytest.mark.parametrize(
    "variant",
    [
        "HTTPS://podnews.net/rss",
        "https://PODNEWS.NET/rss",
        "https://podnews.net:443/rss",
        "https://podnews.net/rss/",
        "HTTPS://PodNews.net:443/rss/",
    ],
)
def test_url_variant_reaches_the_same_subscription(api, variant):
    add_one(api, PODNEWS)

    entry = add_one(api, variant)

    assert entry["guid"] == PODNEWS_GUID
    # The subscription keeps its stored URL: success reports the current one.
    assert entry["feed_url"] == PODNEWS
    assert Subscription.objects.count() == 1


@pytest.mark.parametrize(
    "other",
    [
        "https://podnews.net/RSS",
        "https://podnews.net/rss?x=1",
        "https://podnews.net:8443/rss",
        "https://www.podnews.net/rss",
    ],
)
def test_url_with_any_other_difference_is_another_subscription(api, other):
    add_one(api, PODNEWS)

    entry = add_one(api, other)

    assert entry["guid"] != PODNEWS_GUID
    assert entry["feed_url"] == other
    assert Subscription.objects.count() == 2


# --- existing subscriptions -------------------------------------------------------------------


def test_sent_guid_differing_from_the_current_one_records_a_guid_change(api, clock):
    add_one(api, PODNEWS)
    clock.advance(minutes=5)
    new = str(uuid.uuid4())

    entry = add_one(api, PODNEWS, guid=new)

    assert entry["guid"] == new
    assert Subscription.objects.count() == 1
    old = get(api, PODNEWS_GUID).json()
    assert old["guid"] == PODNEWS_GUID
    assert old["new_guid"] == new
    assert old["guid_changed"] == clock.stamp
    assert old["feed_url"] == PODNEWS
    current = get(api, new).json()
    assert current["guid"] == new
    assert "new_guid" not in current


def test_found_by_guid_with_another_url_moves_the_feed(api):
    guid = str(uuid.uuid4())
    add_one(api, "https://old.example.com/feed", guid=guid)

    entry = add_one(api, "https://new.example.com/feed", guid=guid)

    assert entry == {**entry, "guid": guid, "feed_url": "https://new.example.com/feed"}
    assert Subscription.objects.count() == 1
    assert get(api, guid).json()["feed_url"] == "https://new.example.com/feed"


def test_sent_guid_with_an_earlier_url_of_its_subscription_does_not_undo_the_move(api):
    guid = str(uuid.uuid4())
    add_one(api, "https://old.example.com/feed", guid=guid)
    add_one(api, "https://new.example.com/feed", guid=guid)

    entry = add_one(api, "https://old.example.com/feed", guid=guid)

    # A client that has not heard of the move yet: the URL it sends is not new to the
    # subscription, so the feed has not moved (again), and the move stands.
    assert entry["feed_url"] == "https://new.example.com/feed"
    assert get(api, guid).json()["feed_url"] == "https://new.example.com/feed"
    assert Subscription.objects.count() == 1


def test_a_patch_can_move_a_feed_back_to_an_earlier_url(api):
    guid = str(uuid.uuid4())
    add_one(api, "https://old.example.com/feed", guid=guid)
    add_one(api, "https://new.example.com/feed", guid=guid)

    response = api.patch(
        f"/v1/subscriptions/{guid}", {"new_feed_url": "https://old.example.com/feed"}, format="json"
    )

    assert response.json()["new_feed_url"] == "https://old.example.com/feed"
    assert get(api, guid).json()["feed_url"] == "https://old.example.com/feed"


@pytest.mark.parametrize("earlier", [False, True], ids=["current-url", "earlier-url"])
def test_sent_guid_with_a_url_of_another_subscription_merges_the_two(api, earlier):
    mine, other = str(uuid.uuid4()), str(uuid.uuid4())
    add_one(api, "https://mine.example.com/feed", guid=mine)
    add_one(api, "https://other.example.com/feed", guid=other)
    if earlier:
        add_one(api, "https://other.example.com/moved", guid=other)

    entry = add_one(api, "https://other.example.com/feed", guid=mine)

    # That URL reaches the other subscription (docs/api.md, "Guid history"), the guid reaches this
    # one: they are one feed, kept under the sent guid, with every guid and URL of both.
    assert entry == {**entry, "guid": mine, "feed_url": "https://other.example.com/feed"}
    assert Subscription.objects.count() == 1
    assert get(api, other).json()["new_guid"] == mine
    urls = ["https://mine.example.com/feed", *(["https://other.example.com/moved"] * earlier)]
    for url in urls:
        assert add_one(api, url)["guid"] == mine
    assert Subscription.objects.count() == 1


def test_a_batch_that_moves_a_url_between_two_guids_is_the_same_when_sent_again(api):
    # Found by hypothesis: the last entry used to take the URL out of the second subscription's
    # history, and the same batch sent again then merged the two.
    one, two = str(uuid.UUID(int=1)), str(uuid.UUID(int=2))
    batch = [
        {"feed_url": "http://a.example/feed", "guid": one},
        {"feed_url": "https://a.example/rss", "guid": two},
        {"feed_url": "http://a.example/rss", "guid": two},
        {"feed_url": "https://a.example/rss", "guid": one},
    ]
    first = add(api, *batch).json()
    rows = stored_rows()

    second = add(api, *batch).json()

    assert stored_rows() == rows == (1, 2, 3)
    assert [e["guid"] for e in second["success"]] == [e["guid"] for e in first["success"]]


def test_adding_by_an_old_url_reaches_the_current_subscription(api):
    guid = str(uuid.uuid4())
    add_one(api, "https://old.example.com/feed", guid=guid)
    add_one(api, "https://new.example.com/feed", guid=guid)

    entry = add_one(api, "https://old.example.com/feed/")

    assert entry["guid"] == guid
    assert entry["feed_url"] == "https://new.example.com/feed"
    assert Subscription.objects.count() == 1


def test_sent_old_guid_reaches_the_current_subscription_through_its_history(api):
    add_one(api, PODNEWS)
    new = str(uuid.uuid4())
    add_one(api, PODNEWS, guid=new)

    entry = add_one(api, "https://podnews.net/rss-moved", guid=PODNEWS_GUID)

    assert Subscription.objects.count() == 1
    assert get(api, entry["guid"]).json()["feed_url"] == "https://podnews.net/rss-moved"
    assert get(api, new).json()["feed_url"] == "https://podnews.net/rss-moved"


def test_without_sent_guid_the_computed_guid_finds_a_feed_that_changed_scheme(api):
    add_one(api, "http://podnews.net/rss")

    entry = add_one(api, PODNEWS)

    # http and https are different URLs but the same computed guid: the feed moved to https.
    assert entry["guid"] == PODNEWS_GUID
    assert Subscription.objects.count() == 1
    assert get(api, PODNEWS_GUID).json()["feed_url"] == PODNEWS


def test_adding_an_unsubscribed_feed_resubscribes_it(api, clock):
    add_one(api, PODNEWS)
    clock.advance(hours=1)
    patch = api.patch(f"/v1/subscriptions/{PODNEWS_GUID}", {"is_subscribed": False}, format="json")
    assert patch.status_code == 200
    clock.advance(hours=1)

    entry = add_one(api, PODNEWS)

    assert entry["is_subscribed"] is True
    assert entry["subscription_changed"] == clock.stamp
    read = get(api, PODNEWS_GUID).json()
    assert read["is_subscribed"] is True
    assert read["subscription_changed"] == clock.stamp
    assert Subscription.objects.count() == 1


def test_adding_a_subscribed_feed_again_sets_subscription_changed_to_now(api, clock):
    add_one(api, PODNEWS)
    clock.advance(days=1)

    entry = add_one(api, PODNEWS)

    assert entry["subscription_changed"] == clock.stamp
    assert get(api, PODNEWS_GUID).json()["subscription_changed"] == clock.stamp


def test_adding_a_deleted_feed_clears_deleted_and_resubscribes(api, clock):
    add_one(api, PODNEWS)
    Subscription.objects.update(is_subscribed=False, deleted=clock.now)
    assert get(api, PODNEWS_GUID).status_code == 410
    clock.advance(minutes=1)

    entry = add_one(api, PODNEWS)

    assert entry["is_subscribed"] is True
    response = get(api, PODNEWS_GUID)
    assert response.status_code == 200
    assert "deleted" not in response.json()
    assert response.json()["subscription_changed"] == clock.stamp


# --- requests that cannot be validated --------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({}, id="no-subscriptions"),
        pytest.param({"subs": [{"feed_url": PODNEWS}]}, id="misnamed-key"),
        pytest.param({"subscriptions": None}, id="subscriptions-null"),
        pytest.param({"subscriptions": PODNEWS}, id="subscriptions-string"),
        pytest.param({"subscriptions": {"feed_url": PODNEWS}}, id="subscriptions-object"),
        pytest.param({"subscriptions": [{"feed_url": 5}]}, id="feed_url-number"),
        pytest.param({"subscriptions": [{"feed_url": None}]}, id="feed_url-null"),
        pytest.param({"subscriptions": [{"feed_url": True}]}, id="feed_url-bool"),
        pytest.param({"subscriptions": [{"feed_url": [PODNEWS]}]}, id="feed_url-list"),
        pytest.param({"subscriptions": [{"feed_url": {"href": PODNEWS}}]}, id="feed_url-obj"),
        pytest.param({"subscriptions": [{"guid": PODNEWS_GUID}]}, id="feed_url-missing"),
        pytest.param({"subscriptions": [PODNEWS]}, id="entry-string"),
        pytest.param({"subscriptions": [None]}, id="entry-null"),
        pytest.param({"subscriptions": [[PODNEWS]]}, id="entry-list"),
        pytest.param(
            {"subscriptions": [{"feed_url": PODNEWS}, {"feed_url": 5}]}, id="one-good-one-bad"
        ),
        pytest.param(
            {"subscriptions": [{"feed_url": "https://example.com/a"}, "https://example.com/b"]},
            id="one-good-one-not-object",
        ),
        pytest.param([{"feed_url": PODNEWS}], id="body-list"),
        pytest.param("subscriptions", id="body-string"),
        pytest.param(42, id="body-number"),
        pytest.param(None, id="body-null"),
    ],
)
def test_body_of_the_wrong_shape_is_a_405_and_stores_nothing(api, body):
    response = api.post(ADD, json.dumps(body), content_type="application/json")

    assert response.status_code == 405
    error = response.json()
    assert {k: error[k] for k in ("code", "message")} == INVALID
    assert set(error) <= {"code", "message", "errors"}
    assert stored_rows() == (0, 0, 0)


@pytest.mark.parametrize(
    "raw",
    [
        '{"subscriptions": [',
        "{'subscriptions': []}",
        "not json",
        "",
        "[1, 2,]",
        '{"subscriptions": [{"feed_url": NaN}]}',
        '{"subscriptions": [{"feed_url": "https://podnews.net/rss", "guid": Infinity}]}',
        b'{"subscriptions": [{"feed_url": "https://podnews.net/\xff"}]}',
    ],
)
def test_malformed_json_is_a_405_and_stores_nothing(api, raw):
    response = api.post(ADD, raw, content_type="application/json")

    assert response.status_code == 405
    assert response.json()["code"] == "405"
    assert response.json()["message"].startswith("Input could not be validated")
    assert stored_rows() == (0, 0, 0)


def test_deeply_nested_json_is_a_405_not_a_crash(api):
    raw = '{"subscriptions": ' + "[" * 100_000 + "]" * 100_000 + "}"

    response = api.post(ADD, raw, content_type="application/json")

    assert response.status_code == 405
    assert response.json()["code"] == "405"


def test_body_that_is_not_json_is_a_415(api):
    response = api.post(ADD, "feed_url=https://podnews.net/rss", content_type="text/plain")

    assert response.status_code == 415
    assert response.json()["code"] == "415"
    assert stored_rows() == (0, 0, 0)


def test_more_than_500_entries_is_a_405_naming_the_limit(api):
    entries = [f"https://example.com/{i}" for i in range(501)]

    response = add(api, *entries)

    assert response.status_code == 405
    assert response.json() == {
        "code": "405",
        "message": (
            "Input could not be validated: too many subscriptions, at most 500 entries per request"
        ),
    }
    assert stored_rows() == (0, 0, 0)


def test_exactly_500_entries_are_added(api):
    entries = [f"https://example.com/{i}" for i in range(500)]

    response = add(api, *entries)

    assert response.status_code == 200
    assert [s["feed_url"] for s in response.json()["success"]] == entries
    assert Subscription.objects.count() == 500


def test_body_over_one_mebibyte_is_a_413_naming_the_limit(api):
    entries = [f"https://example.com/{i}/" + "a" * 2500 for i in range(420)]

    response = add(api, *entries)

    assert response.status_code == 413
    assert response.json()["code"] == "413"
    assert re.search(r"1048576|1 ?MiB", response.json()["message"])
    assert stored_rows() == (0, 0, 0)


# --- URL limits and Unicode -------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "https://bücher.example/feed",
        "https://例え.jp/ポッドキャスト/rss",
        "https://example.com/podcasts/café/épisodes.xml",
        "https://example.com/✓/rss?titre=été",
    ],
)
def test_unicode_feed_urls_are_added_and_stored_as_sent(api, url):
    entry = add_one(api, url)

    assert entry["feed_url"] == url
    assert get(api, entry["guid"]).json()["feed_url"] == url


def test_idn_host_case_variant_reaches_the_same_subscription(api):
    first = add_one(api, "https://bücher.example/feed")

    again = add_one(api, "https://BÜCHER.example/feed/")

    assert again["guid"] == first["guid"]
    assert Subscription.objects.count() == 1


def test_url_of_2048_characters_is_added_and_2049_fails(api):
    prefix = "https://example.com/"
    at_limit = prefix + "a" * (2048 - len(prefix))
    over = at_limit + "a"

    response = add(api, at_limit, over)

    body = response.json()
    assert [s["feed_url"] for s in body["success"]] == [at_limit]
    assert body["failure"] == [
        {"feed_url": over, "message": "Feed URL is longer than the 2048-character limit"}
    ]
    assert get(api, body["success"][0]["guid"]).json()["feed_url"] == at_limit


def test_url_of_2048_multibyte_characters_is_added(api):
    url = "https://example.com/" + "✓" * 2028
    assert len(url) == 2048

    entry = add_one(api, url)

    assert get(api, entry["guid"]).json()["feed_url"] == url
    assert add_one(api, url)["guid"] == entry["guid"]
    assert Subscription.objects.count() == 1


# --- authentication and isolation -------------------------------------------------------------


def _expired_token(user):
    token = AccessToken.for_user(user)
    token.set_exp(lifetime=-timedelta(seconds=1))
    return f"Bearer {token}"


def _forged_token(user):
    payload = dict(AccessToken.for_user(user).payload)
    return "Bearer " + jwt.encode(payload, "not-the-server-secret-but-long-enough!", "HS256")


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "Bearer",
        "Bearer not-a-token",
        "Token abc",
        "Basic dXNlcjpwYXNz",
        _expired_token,
        _forged_token,
    ],
)
def test_missing_or_bad_token_is_a_401_and_stores_nothing(user, authorization):
    client = client_for(user)
    if authorization is None:
        client.credentials()
    else:
        value = authorization(user) if callable(authorization) else authorization
        client.credentials(HTTP_AUTHORIZATION=value)

    response = add(client, PODNEWS)

    assert response.status_code == 401
    assert response.json() == UNAUTHORIZED
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert stored_rows() == (0, 0, 0)


def test_anonymous_post_is_a_401(anon):
    response = add(anon, PODNEWS)

    assert response.status_code == 401
    assert response.json() == UNAUTHORIZED


def test_same_feed_is_subscribed_independently_by_two_users(api, other_api):
    mine = add_one(api, PODNEWS)
    theirs = add_one(other_api, PODNEWS)
    assert mine["guid"] == theirs["guid"] == PODNEWS_GUID
    assert Subscription.objects.count() == 2

    patch = api.patch(f"/v1/subscriptions/{PODNEWS_GUID}", {"is_subscribed": False}, format="json")

    assert patch.status_code == 200
    assert get(api, PODNEWS_GUID).json()["is_subscribed"] is False
    assert get(other_api, PODNEWS_GUID).json()["is_subscribed"] is True


def test_guid_another_user_has_does_not_reach_their_subscription(api, other_api):
    guid = str(uuid.uuid4())
    add_one(other_api, "https://theirs.example.com/feed", guid=guid)

    entry = add_one(api, "https://mine.example.com/feed", guid=guid)

    assert entry["guid"] == guid
    assert entry["feed_url"] == "https://mine.example.com/feed"
    assert get(other_api, guid).json()["feed_url"] == "https://theirs.example.com/feed"
    assert get(api, guid).json()["feed_url"] == "https://mine.example.com/feed"
    assert Subscription.objects.count() == 2


def test_requests_past_the_user_rate_get_429_naming_the_limit(api, other_api, monkeypatch):
    # The real rate is 1200/min: lower it so the test stays short.
    monkeypatch.setattr(UserThrottle, "THROTTLE_RATES", {"user": "3/min", "login": "10/min"})
    for _ in range(3):
        assert add(api, PODNEWS).status_code == 200

    response = add(api, PODNEWS)

    assert response.status_code == 429
    assert response.json()["code"] == "429"
    assert "3/min" in response.json()["message"]
    assert int(response.headers["Retry-After"]) > 0
    assert add(other_api, PODNEWS).status_code == 200


# --- queries ----------------------------------------------------------------------------------


def _entries(count, host="example.com"):
    return [f"https://{host}/{i}" for i in range(count)]


def test_adding_one_new_entry_runs_a_fixed_number_of_queries(api, django_assert_max_num_queries):
    with django_assert_max_num_queries(MAX_ADD_QUERIES):
        response = add(api, PODNEWS)
    assert response.status_code == 200


def test_adding_500_new_entries_runs_as_many_queries_as_one(api, django_assert_max_num_queries):
    with django_assert_max_num_queries(MAX_ADD_QUERIES):
        response = add(api, *_entries(500))
    assert len(response.json()["success"]) == 500


def test_adding_500_existing_entries_runs_as_many_queries_as_one(
    api, django_assert_max_num_queries
):
    add(api, *_entries(500))

    with django_assert_max_num_queries(MAX_ADD_QUERIES):
        response = add(api, *_entries(500))
    assert len(response.json()["success"]) == 500
    assert Subscription.objects.count() == 500


def _entries_of_every_shape(client, tag, per_shape):
    """`per_shape` entries of each kind an add can be: new, re-add, rename, move and merge."""

    def urls(kind):
        return [f"https://{tag}-{kind}.example.com/{i}" for i in range(per_shape)]

    kinds = ["readd", "rename", "move", "mergeinto", "mergefrom"]
    existing = add(client, *[url for kind in kinds for url in urls(kind)]).json()["success"]
    of = {kind: existing[i * per_shape : (i + 1) * per_shape] for i, kind in enumerate(kinds)}
    return [
        *urls("new"),
        *[s["feed_url"] + "/" for s in of["readd"]],
        *[{"feed_url": s["feed_url"], "guid": str(uuid.uuid4())} for s in of["rename"]],
        *[
            {"feed_url": s["feed_url"].replace("-move.", "-moved."), "guid": s["guid"]}
            for s in of["move"]
        ],
        # One subscription's guid with another's URL: the two are one feed.
        *[
            {"feed_url": source["feed_url"], "guid": into["guid"]}
            for into, source in zip(of["mergeinto"], of["mergefrom"], strict=True)
        ],
    ]


def test_queries_of_an_add_do_not_grow_with_its_entries(api, django_assert_max_num_queries):
    one_of_each = _entries_of_every_shape(api, "small", 1)
    with CaptureQueriesContext(connection) as small:
        assert add(api, *one_of_each).status_code == 200
    # Read now: the next request clears the connection's query log.
    small_count = len(small.captured_queries)
    eighty_of_each = _entries_of_every_shape(api, "big", 80)

    with django_assert_max_num_queries(small_count):
        response = add(api, *eighty_of_each)

    assert len(response.json()["success"]) == 400
    # 80 new, and of the 320 existing ones 80 were merged into 80 others.
    assert Subscription.objects.filter(feed_url__contains="://big-").count() == 400


@pytest.mark.postgresql
def test_an_add_reads_one_index_entry_per_guid_and_url_whatever_the_user_has(user):
    """Its lookup reads the history tables' indexes once per value, not the user's rows: as a
    join or with `= ANY`, it was planned on statistics from before the user's last large add,
    and read every row of the user's."""
    for batch in range(4):
        entries = [services.AddEntry(f"https://example.com/{batch}/{i}") for i in range(500)]
        services.subscription_add_many(user=user, entries=entries)
    asked = [f"https://example.com/0/{i}" for i in range(25)]
    asked += [f"https://example.com/new/{i}" for i in range(25)]

    plan, (by_guid, by_digest) = plan_of(
        lambda: selectors.subscriptions_reached(
            user=user,
            guids={feeds.computed_guid(url) for url in asked},
            digests={feeds.feed_key_digest(url) for url in asked},
        )
    )

    history = (SubscriptionGuid._meta.db_table, SubscriptionFeed._meta.db_table)
    read = [
        (node.get("Actual Rows", 0) + node.get("Rows Removed by Filter", 0)) * node["Actual Loops"]
        for node in nodes(plan)
        if node.get("Relation Name") in history
        or node.get("Index Name", "").startswith(("subscriptionguid_", "subscriptionfeed_"))
    ]
    assert read, plan
    assert max(read) <= len(asked), (read, plan)
    assert len(by_guid) == len(by_digest) == 25


# --- no input makes a 500 ---------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner),
    max_leaves=10,
)
entry_values = st.fixed_dictionaries(
    {},
    optional={"feed_url": json_values | st.text(max_size=40), "guid": json_values | st.uuids()},
).map(lambda d: {k: str(v) if isinstance(v, uuid.UUID) else v for k, v in d.items()})
bodies = json_values | st.fixed_dictionaries(
    {"subscriptions": st.lists(entry_values | json_values, max_size=4)}
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(body=bodies)
def test_any_json_body_is_answered_200_or_405_never_500(api, body):
    response = api.post(ADD, json.dumps(body), content_type="application/json")

    assert response.status_code in (200, 405), response.content
    if response.status_code == 405:
        assert response.json()["code"] == "405"


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    urls=st.lists(
        st.text(max_size=40) | st.text(max_size=40).map(lambda t: "https://" + t),
        min_size=1,
        max_size=5,
    )
)
def test_every_string_feed_url_is_reported_in_success_or_failure(api, urls):
    response = add(api, *urls)

    assert response.status_code == 200
    body = response.json()
    success, failure = body.get("success", []), body.get("failure", [])
    assert len(success) + len(failure) == len(urls)
    # Failures come back as sent, in the order sent.
    remaining = iter(urls)
    assert all(f["feed_url"] in remaining for f in failure)
    assert all(f["message"] for f in failure)
    for item in success:
        assert item["is_subscribed"] is True
        assert uuid.UUID(item["guid"])
