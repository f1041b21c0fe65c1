"""GET and PATCH /v1/subscriptions/{guid} against docs/api.md."""

import json
import re
import uuid

import pytest

from subscriptions.models import Subscription, SubscriptionFeed, SubscriptionGuid

PODNEWS = "https://podnews.net/rss"
PODNEWS_GUID = "9b024349-ccf0-5f69-a609-6b82873eab3c"
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
NOT_FOUND = {"code": "404", "message": "Resource not found"}
GONE = {"code": "410", "message": "Subscription has been deleted"}
UNAUTHORIZED = {"code": "401", "message": "User not authorized"}
MAX_GET_QUERIES = 2
MAX_PATCH_QUERIES = 10
# A merge also moves the history rows, ends the merged guid and removes one subscription.
MAX_MERGE_QUERIES = 14

pytestmark = pytest.mark.django_db


def add(client, feed_url, guid=None):
    entry = {"feed_url": feed_url} if guid is None else {"feed_url": feed_url, "guid": guid}
    response = client.post("/v1/subscriptions", {"subscriptions": [entry]}, format="json")
    assert response.status_code == 200
    [success] = response.json()["success"]
    return success["guid"]


def get(client, guid):
    return client.get(f"/v1/subscriptions/{guid}")


def patch(client, guid, body):
    return client.patch(f"/v1/subscriptions/{guid}", body, format="json")


def patch_ok(client, guid, body):
    response = patch(client, guid, body)
    assert response.status_code == 200, response.json()
    return response.json()


def snapshot():
    """Everything stored, to show that a refused request changed nothing."""
    return (
        list(Subscription.objects.order_by("pk").values()),
        list(SubscriptionGuid.objects.order_by("pk").values()),
        list(SubscriptionFeed.objects.order_by("pk").values()),
    )


def new_guid():
    return str(uuid.uuid4())


@pytest.fixture
def podnews(api, clock):
    """The user's subscription to podnews, added at the clock's start."""
    return add(api, PODNEWS)


# --- GET --------------------------------------------------------------------------------------


def test_get_answers_the_subscription(api, podnews, clock):
    response = get(api, podnews)

    assert response.status_code == 200
    assert response.json() == {
        "feed_url": PODNEWS,
        "guid": PODNEWS_GUID,
        "is_subscribed": True,
        "subscription_changed": clock.stamp,
    }


def test_get_timestamps_are_rfc3339_utc_with_milliseconds(api):
    guid = add(api, PODNEWS)
    patch_ok(api, guid, {"new_guid": new_guid()})

    body = get(api, guid).json()

    assert TIMESTAMP.match(body["subscription_changed"])
    assert TIMESTAMP.match(body["guid_changed"])


@pytest.mark.parametrize(
    "spelling",
    [
        PODNEWS_GUID.upper(),
        "{" + PODNEWS_GUID + "}",
        "urn:uuid:" + PODNEWS_GUID,
        PODNEWS_GUID.replace("-", ""),
    ],
)
def test_get_by_any_uuid_spelling_answers_lowercase_hyphenated(api, podnews, spelling):
    response = get(api, spelling)

    assert response.status_code == 200
    assert response.json()["guid"] == PODNEWS_GUID
    assert "new_guid" not in response.json()


def test_get_unknown_guid_is_404(api, podnews):
    response = get(api, new_guid())

    assert response.status_code == 404
    assert response.json() == NOT_FOUND


def test_get_another_users_guid_is_the_same_404_as_a_nonexistent_one(api, other_api):
    theirs = add(other_api, "https://theirs.example.com/feed")
    nonexistent = get(api, new_guid())

    response = get(api, theirs)

    assert response.status_code == nonexistent.status_code == 404
    assert response.json() == nonexistent.json() == NOT_FOUND
    assert response.headers.get("Content-Type") == nonexistent.headers.get("Content-Type")


def test_get_another_users_old_guid_is_404(api, other_api):
    old = add(other_api, "https://theirs.example.com/feed")
    patch_ok(other_api, old, {"new_guid": new_guid()})

    response = get(api, old)

    assert response.status_code == 404
    assert response.json() == NOT_FOUND


@pytest.mark.parametrize(
    "path_guid",
    [
        "not-a-uuid",
        "123",
        "9b024349-ccf0-5f69-a609-6b82873eab3",
        "9b024349-ccf0-5f69-a609-zzzz",
        "%00",
        "9b024349-ccf0-5f69-a609-6b82873eab3c%00",
        "a" * 5000,
    ],
)
def test_get_with_a_path_guid_that_is_not_a_uuid_is_405(api, path_guid):
    response = get(api, path_guid)

    assert response.status_code == 405
    assert response.json() == {
        "code": "405",
        "message": "Input could not be validated: guid must be a UUID",
        "errors": {"guid": ["must be a UUID"]},
    }


def test_get_deleted_subscription_is_410(api, podnews, clock):
    Subscription.objects.update(is_subscribed=False, deleted=clock.now)

    response = get(api, podnews)

    assert response.status_code == 410
    assert response.json() == GONE


def test_get_deleted_subscription_by_an_old_guid_is_410(api, podnews, clock):
    patch_ok(api, podnews, {"new_guid": new_guid()})
    Subscription.objects.update(is_subscribed=False, deleted=clock.now)

    response = get(api, podnews)

    assert response.status_code == 410
    assert response.json() == GONE


@pytest.mark.parametrize("method", ["get", "patch"])
def test_no_token_is_401(anon, podnews, method):
    response = getattr(anon, method)(
        f"/v1/subscriptions/{podnews}", {"is_subscribed": False}, format="json"
    )

    assert response.status_code == 401
    assert response.json() == UNAUTHORIZED
    assert response.headers["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize("method", ["get", "patch"])
def test_bad_token_is_401_and_changes_nothing(anon, podnews, method):
    anon.credentials(HTTP_AUTHORIZATION="Bearer not-a-real-token")
    before = snapshot()

    response = getattr(anon, method)(
        f"/v1/subscriptions/{podnews}", {"is_subscribed": False}, format="json"
    )

    assert response.status_code == 401
    assert response.json() == UNAUTHORIZED
    assert snapshot() == before


@pytest.mark.parametrize("method", ["put", "post"])
def test_unsupported_method_is_405_with_allow(api, podnews, method):
    response = getattr(api, method)(
        f"/v1/subscriptions/{podnews}", {"feed_url": PODNEWS}, format="json"
    )

    assert response.status_code == 405
    assert response.json()["code"] == "405"
    assert "GET" in response.headers["Allow"]
    assert "PATCH" in response.headers["Allow"]


def test_unknown_path_below_a_subscription_is_404_error_object(api, podnews):
    response = api.get(f"/v1/subscriptions/{podnews}/episodes")

    assert response.status_code == 404
    assert response.json() == NOT_FOUND


# --- PATCH: each change -----------------------------------------------------------------------


def test_patch_is_subscribed_answers_only_the_status_change(api, podnews, clock):
    clock.advance(hours=1)

    body = patch_ok(api, podnews, {"is_subscribed": False})

    assert body == {"is_subscribed": False, "subscription_changed": clock.stamp}
    read = get(api, podnews).json()
    assert read["is_subscribed"] is False
    assert read["subscription_changed"] == clock.stamp


def test_patch_is_subscribed_back_to_true_sets_subscription_changed_again(api, podnews, clock):
    clock.advance(hours=1)
    patch_ok(api, podnews, {"is_subscribed": False})
    clock.advance(hours=1)

    body = patch_ok(api, podnews, {"is_subscribed": True})

    assert body == {"is_subscribed": True, "subscription_changed": clock.stamp}
    assert get(api, podnews).json()["is_subscribed"] is True


def test_patch_is_subscribed_to_its_current_value_leaves_subscription_changed(api, podnews, clock):
    added_at = clock.stamp
    clock.advance(hours=1)

    body = patch_ok(api, podnews, {"is_subscribed": True})

    assert body == {"is_subscribed": True, "subscription_changed": added_at}
    assert get(api, podnews).json()["subscription_changed"] == added_at


def test_patch_new_feed_url_answers_only_the_url_change(api, podnews, clock):
    clock.advance(hours=1)
    url = "https://example.com/podnews/feed.xml?format=rss"

    body = patch_ok(api, podnews, {"new_feed_url": url})

    assert set(body) == {"new_feed_url", "subscription_changed"}
    assert body["new_feed_url"] == url
    read = get(api, podnews).json()
    assert read["feed_url"] == url
    assert read["guid"] == podnews
    assert read["subscription_changed"] == body["subscription_changed"]


def test_after_a_url_change_both_the_old_and_new_url_reach_the_subscription(api, podnews):
    patch_ok(api, podnews, {"new_feed_url": "https://example.com/moved"})

    assert add(api, PODNEWS) == podnews
    assert add(api, "https://example.com/moved/") == podnews
    assert Subscription.objects.count() == 1
    assert get(api, podnews).json()["feed_url"] == "https://example.com/moved"


def test_patch_new_guid_answers_only_the_guid_change(api, podnews, clock):
    clock.advance(hours=1)
    guid = new_guid()

    body = patch_ok(api, podnews, {"new_guid": guid})

    assert body == {"new_guid": guid, "guid_changed": clock.stamp}
    old = get(api, podnews).json()
    assert old == {
        "feed_url": PODNEWS,
        "guid": podnews,
        "new_guid": guid,
        "guid_changed": clock.stamp,
        "is_subscribed": True,
        "subscription_changed": old["subscription_changed"],
    }
    current = get(api, guid).json()
    assert current["guid"] == guid
    assert "new_guid" not in current
    assert current["guid_changed"] == clock.stamp


def test_patch_new_guid_in_uppercase_is_answered_lowercase(api, podnews):
    guid = new_guid()

    body = patch_ok(api, podnews, {"new_guid": guid.upper()})

    assert body["new_guid"] == guid
    assert get(api, guid).json()["guid"] == guid


def test_patch_of_all_three_answers_all_three_changes(api, podnews, clock):
    clock.advance(hours=1)
    guid = new_guid()

    body = patch_ok(
        api,
        podnews,
        {"new_feed_url": "https://example.com/x", "is_subscribed": False, "new_guid": guid},
    )

    assert body == {
        "new_feed_url": "https://example.com/x",
        "is_subscribed": False,
        "subscription_changed": clock.stamp,
        "new_guid": guid,
        "guid_changed": clock.stamp,
    }
    assert get(api, guid).json() == {
        "feed_url": "https://example.com/x",
        "guid": guid,
        "is_subscribed": False,
        "subscription_changed": clock.stamp,
        "guid_changed": clock.stamp,
    }


def test_patch_through_an_old_guid_changes_the_current_subscription(api, podnews):
    guid = new_guid()
    patch_ok(api, podnews, {"new_guid": guid})

    patch_ok(api, podnews, {"is_subscribed": False})

    assert get(api, guid).json()["is_subscribed"] is False
    assert Subscription.objects.count() == 1


def test_patch_by_uppercase_path_guid_works(api, podnews):
    body = patch_ok(api, podnews.upper(), {"is_subscribed": False})

    assert body["is_subscribed"] is False


# --- PATCH: refused input ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({}, id="empty"),
        pytest.param({"feed_url": "https://example.com/x"}, id="unknown-field"),
        pytest.param({"is_subscribed": False, "colour": "red"}, id="unknown-with-valid"),
        pytest.param({"guid": new_guid()}, id="guid-not-new_guid"),
        pytest.param({"is_subscribed": "true"}, id="is_subscribed-string-true"),
        pytest.param({"is_subscribed": "false"}, id="is_subscribed-string-false"),
        pytest.param({"is_subscribed": 0}, id="is_subscribed-zero"),
        pytest.param({"is_subscribed": None}, id="is_subscribed-null"),
        pytest.param({"new_guid": 123}, id="new_guid-number"),
        pytest.param({"new_guid": None}, id="new_guid-null"),
        pytest.param({"new_guid": "not-a-uuid"}, id="new_guid-not-uuid"),
        pytest.param({"new_guid": [new_guid()]}, id="new_guid-list"),
        pytest.param({"new_feed_url": None}, id="new_feed_url-null"),
        pytest.param({"new_feed_url": 5}, id="new_feed_url-number"),
        pytest.param({"new_feed_url": {"href": PODNEWS}}, id="new_feed_url-object"),
        pytest.param({"new_feed_url": "https://podnews.net/\x00"}, id="new_feed_url-nul"),
        pytest.param({"is_subscribed": False, "new_guid": "nope"}, id="one-good-one-bad-guid"),
        pytest.param(
            {"is_subscribed": False, "new_feed_url": "podnews.net/rss"}, id="one-good-one-bad-url"
        ),
        pytest.param(
            {"new_guid": new_guid(), "new_feed_url": "ftp://podnews.net/rss"},
            id="good-guid-bad-url",
        ),
        pytest.param([{"is_subscribed": False}], id="body-list"),
        pytest.param("is_subscribed", id="body-string"),
        pytest.param(None, id="body-null"),
    ],
)
def test_patch_that_cannot_be_validated_is_405_and_changes_nothing(api, podnews, body):
    before = snapshot()

    response = api.patch(
        f"/v1/subscriptions/{podnews}", json.dumps(body), content_type="application/json"
    )

    assert response.status_code == 405
    assert response.json()["code"] == "405"
    assert set(response.json()) <= {"code", "message", "errors"}
    assert snapshot() == before


@pytest.mark.parametrize("raw", ["{", "{'is_subscribed': false}", "is_subscribed=false", ""])
def test_patch_with_malformed_json_is_405_and_changes_nothing(api, podnews, raw):
    before = snapshot()

    response = api.patch(f"/v1/subscriptions/{podnews}", raw, content_type="application/json")

    assert response.status_code == 405
    assert response.json()["code"] == "405"
    assert snapshot() == before


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("podnews.net/rss", "No protocol present"),
        ("ftp://podnews.net/rss", "Protocol must be http or https"),
        ("https://", "No host present"),
        ("https://podnews.net/r ss", "Feed URL contains whitespace, control or invalid characters"),
    ],
)
def test_patch_new_feed_url_breaking_a_rule_is_405_naming_it(api, podnews, url, problem):
    before = snapshot()

    response = patch(api, podnews, {"new_feed_url": url})

    assert response.status_code == 405
    assert response.json()["code"] == "405"
    assert problem in json.dumps(response.json(), ensure_ascii=False)
    assert snapshot() == before


def test_patch_new_feed_url_with_a_lone_surrogate_is_405_not_a_crash(api, podnews):
    before = snapshot()

    response = api.patch(
        f"/v1/subscriptions/{podnews}",
        '{"new_feed_url": "https://podnews.net/\\ud800"}',
        content_type="application/json",
    )

    assert response.status_code == 405
    assert response.json()["code"] == "405"
    assert snapshot() == before


def test_patch_new_feed_url_over_2048_characters_is_405_naming_the_limit(api, podnews):
    prefix = "https://example.com/"
    at_limit = prefix + "a" * (2048 - len(prefix))
    before = snapshot()

    response = patch(api, podnews, {"new_feed_url": at_limit + "a"})

    assert response.status_code == 405
    assert response.json()["code"] == "405"
    assert "2048" in response.json()["message"]
    assert snapshot() == before
    assert patch_ok(api, podnews, {"new_feed_url": at_limit})["new_feed_url"] == at_limit


@pytest.mark.parametrize("spelling", [str.lower, str.upper, lambda g: "{" + g + "}"])
def test_patch_new_guid_equal_to_the_current_guid_is_405(api, podnews, spelling):
    before = snapshot()

    response = patch(api, podnews, {"new_guid": spelling(podnews)})

    assert response.status_code == 405
    assert response.json()["code"] == "405"
    assert snapshot() == before


def test_patch_unknown_guid_is_404(api, podnews):
    response = patch(api, new_guid(), {"is_subscribed": False})

    assert response.status_code == 404
    assert response.json() == NOT_FOUND


def test_patch_another_users_guid_is_the_same_404_and_changes_nothing(api, other_api):
    theirs = add(other_api, "https://theirs.example.com/feed")
    nonexistent = patch(api, new_guid(), {"is_subscribed": False})
    before = snapshot()

    response = patch(api, theirs, {"is_subscribed": False, "new_guid": new_guid()})

    assert response.status_code == nonexistent.status_code == 404
    assert response.json() == nonexistent.json() == NOT_FOUND
    assert snapshot() == before
    assert get(other_api, theirs).json()["is_subscribed"] is True


def test_patch_with_a_path_guid_that_is_not_a_uuid_is_405(api):
    response = patch(api, "not-a-uuid", {"is_subscribed": False})

    assert response.status_code == 405
    assert response.json()["code"] == "405"


def test_patch_deleted_subscription_is_410_and_changes_nothing(api, podnews, clock):
    Subscription.objects.update(is_subscribed=False, deleted=clock.now)
    before = snapshot()

    response = patch(api, podnews, {"is_subscribed": True})

    assert response.status_code == 410
    assert response.json() == GONE
    assert snapshot() == before


def test_patch_new_guid_another_user_has_is_an_ordinary_change(api, other_api, podnews):
    theirs = add(other_api, "https://theirs.example.com/feed", guid=new_guid())

    body = patch_ok(api, podnews, {"new_guid": theirs})

    assert body["new_guid"] == theirs
    assert get(api, theirs).json()["feed_url"] == PODNEWS
    assert get(other_api, theirs).json()["feed_url"] == "https://theirs.example.com/feed"
    assert Subscription.objects.count() == 2


# --- guid history -----------------------------------------------------------------------------


@pytest.fixture
def chain(api, clock):
    """A subscription whose guid went A -> B -> C, the last change at the clock's time."""
    a, b, c = new_guid(), new_guid(), new_guid()
    add(api, PODNEWS, guid=a)
    clock.advance(hours=1)
    patch_ok(api, a, {"new_guid": b})
    clock.advance(hours=1)
    patch_ok(api, b, {"new_guid": c})
    return a, b, c


def test_chain_of_guids_is_read_by_each_of_them(api, chain, clock):
    a, b, c = chain

    for old in (a, b):
        body = get(api, old).json()
        assert body["guid"] == old
        assert body["new_guid"] == c
        assert body["guid_changed"] == clock.stamp
        assert body["feed_url"] == PODNEWS
    current = get(api, c).json()
    assert current["guid"] == c
    assert "new_guid" not in current
    assert current["guid_changed"] == clock.stamp
    assert Subscription.objects.count() == 1


def test_chain_read_by_an_uppercase_old_guid_answers_it_lowercase(api, chain):
    a, _, c = chain

    body = get(api, a.upper()).json()

    assert body["guid"] == a
    assert body["new_guid"] == c


@pytest.mark.parametrize(("path", "target"), [(2, 0), (2, 1), (0, 1), (1, 0), (0, 2)])
def test_change_that_would_loop_the_history_is_405_and_changes_nothing(api, chain, path, target):
    before = snapshot()

    response = patch(api, chain[path], {"new_guid": chain[target]})

    assert response.status_code == 405
    assert response.json()["code"] == "405"
    assert snapshot() == before
    assert get(api, chain[0]).json()["new_guid"] == chain[2]
    assert "new_guid" not in get(api, chain[2]).json()


def test_new_guid_of_another_subscription_merges_the_two(api, clock):
    mine = add(api, "https://mine.example.com/feed")
    other = add(api, "https://other.example.com/feed")
    patch_ok(api, mine, {"is_subscribed": False})
    clock.advance(hours=1)

    body = patch_ok(api, mine, {"new_guid": other})

    assert body == {"new_guid": other, "guid_changed": clock.stamp}
    assert Subscription.objects.count() == 1
    old = get(api, mine).json()
    assert old["guid"] == mine
    assert old["new_guid"] == other
    merged = get(api, other).json()
    assert merged["guid"] == other
    assert "new_guid" not in merged
    # The merged subscription keeps the state of the one the client acted on.
    assert old["is_subscribed"] is merged["is_subscribed"] is False


def test_merged_subscription_is_reached_by_every_guid_and_url_either_had(api):
    first = new_guid()
    add(api, "https://mine.example.com/feed", guid=first)
    mine = new_guid()
    patch_ok(api, first, {"new_guid": mine})
    other = add(api, "https://other.example.com/feed")

    patch_ok(api, mine, {"new_guid": other})

    for guid in (first, mine):
        assert get(api, guid).json()["new_guid"] == other
    assert add(api, "https://mine.example.com/feed") == other
    assert add(api, "https://other.example.com/feed") == other
    assert Subscription.objects.count() == 1


def test_merged_subscription_can_be_renamed_again(api):
    mine = add(api, "https://mine.example.com/feed")
    other = add(api, "https://other.example.com/feed")
    patch_ok(api, mine, {"new_guid": other})
    latest = new_guid()

    patch_ok(api, other, {"new_guid": latest})

    assert get(api, mine).json()["new_guid"] == latest
    assert get(api, other).json()["new_guid"] == latest
    assert patch(api, latest, {"new_guid": mine}).status_code == 405


@pytest.mark.parametrize("earlier", [False, True], ids=["current-url", "earlier-url"])
def test_new_feed_url_of_another_subscription_merges_the_two(api, earlier):
    other = add(api, "https://other.example.com/feed")
    if earlier:
        patch_ok(api, other, {"new_feed_url": "https://other.example.com/moved"})
    mine = add(api, "https://mine.example.com/feed")
    patch_ok(api, mine, {"is_subscribed": False})

    body = patch_ok(api, mine, {"new_feed_url": "https://OTHER.example.com/feed/"})

    # Every URL a subscription ever had reaches it (docs/api.md, "Guid history"): the two are one
    # feed.
    assert body["new_feed_url"] == "https://OTHER.example.com/feed/"
    assert Subscription.objects.count() == 1
    assert get(api, other).json()["new_guid"] == mine
    merged = get(api, mine).json()
    assert merged["feed_url"] == "https://OTHER.example.com/feed/"
    assert merged["is_subscribed"] is False  # the one the client acted on keeps its state
    if earlier:
        assert add(api, "https://other.example.com/moved") == mine
    assert Subscription.objects.count() == 1


# --- queries ----------------------------------------------------------------------------------


def test_get_runs_a_fixed_number_of_queries(api, podnews, django_assert_max_num_queries):
    with django_assert_max_num_queries(MAX_GET_QUERIES):
        assert get(api, podnews).status_code == 200


def test_get_by_an_old_guid_runs_as_many_queries(api, chain, django_assert_max_num_queries):
    with django_assert_max_num_queries(MAX_GET_QUERIES):
        assert get(api, chain[0]).json()["new_guid"] == chain[2]


def test_patch_status_runs_a_fixed_number_of_queries(api, podnews, django_assert_max_num_queries):
    with django_assert_max_num_queries(6):
        patch_ok(api, podnews, {"is_subscribed": False})


def test_patch_of_everything_runs_a_fixed_number_of_queries(
    api, chain, django_assert_max_num_queries
):
    with django_assert_max_num_queries(MAX_PATCH_QUERIES):
        patch_ok(
            api,
            chain[0],
            {
                "new_feed_url": "https://example.com/x",
                "is_subscribed": False,
                "new_guid": new_guid(),
            },
        )


@pytest.mark.parametrize("history", [0, 10])
def test_patch_merge_runs_a_fixed_number_of_queries(api, history, django_assert_max_num_queries):
    mine = add(api, "https://mine.example.com/feed")
    for i in range(history):
        mine = patch_ok(api, mine, {"new_guid": new_guid()})["new_guid"]
        patch_ok(api, mine, {"new_feed_url": f"https://mine.example.com/feed{i}"})
    other = add(api, "https://other.example.com/feed")

    with django_assert_max_num_queries(MAX_MERGE_QUERIES):
        patch_ok(api, mine, {"new_guid": other})
