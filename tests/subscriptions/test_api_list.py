"""GET /v1/subscriptions: the list and its sync by `since` (docs/api.md; OPA get-all)."""

import functools
import json
import uuid
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from django.db import connection

from subscriptions.models import Subscription, SubscriptionGuid
from tests.factories import UserFactory
from tests.helpers import assert_error, nodes, plan_of

pytestmark = pytest.mark.django_db

LIST = "/v1/subscriptions"
# The OPA get-all page's resolution example: one subscription, three guids.
GUID_A = "64c1593b-5a1e-4e89-b8a3-d91501065e80"
GUID_B = "daac3ce5-7b16-4cf0-8294-86ad71944a64"
GUID_C = "36a47c4c-4aa3-428a-8132-3712a8422002"


def at(stamp):
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def add(api, *feeds, guid=None):
    entries = [{"feed_url": f} if guid is None else {"feed_url": f, "guid": guid} for f in feeds]
    response = api.post(LIST, {"subscriptions": entries}, format="json")
    assert response.status_code == 200, response.json()
    assert not response.json()["failure"]
    return [entry["guid"] for entry in response.json()["success"]]


def patch(api, guid, body):
    response = api.patch(f"{LIST}/{guid}", body, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def listing(api, **params):
    response = api.get(LIST, params)
    assert response.status_code == 200, response.json()
    return response.json()


def walk(api, **params):
    """Every item, following `next` from the first page; also each page's body."""
    pages = [listing(api, **params)]
    while "next" in pages[-1]:
        response = api.get(pages[-1]["next"])
        assert response.status_code == 200
        pages.append(response.json())
    return [item for page in pages for item in page["subscriptions"]], pages


def feeds(n, prefix="https://example.com/feed"):
    return [f"{prefix}{i}" for i in range(n)]


def delete(api, guid, capture):
    with capture(execute=True):
        response = api.delete(f"{LIST}/{guid}")
    assert response.status_code == 202


# --- the body ----------------------------------------------------------------------------------


def test_empty_list(api):
    assert listing(api) == {"total": 0, "page": 1, "per_page": 50, "subscriptions": []}


def test_item_is_the_subscription_as_get_answers_it(api, clock):
    [guid] = add(api, "https://podnews.net/rss")

    body = listing(api)

    assert body == {
        "total": 1,
        "page": 1,
        "per_page": 50,
        "subscriptions": [
            {
                "feed_url": "https://podnews.net/rss",
                "guid": guid,
                "is_subscribed": True,
                "subscription_changed": clock.stamp,
            }
        ],
    }
    assert body["subscriptions"][0] == api.get(f"{LIST}/{guid}").json()


def test_unsubscribed_and_deleted_items_are_listed(api, clock, django_capture_on_commit_callbacks):
    kept, unsubscribed, deleted = add(api, *feeds(3))
    clock.advance(seconds=1)
    patch(api, unsubscribed, {"is_subscribed": False})
    clock.advance(seconds=1)
    delete(api, deleted, django_capture_on_commit_callbacks)

    items = {item["guid"]: item for item in listing(api)["subscriptions"]}

    assert items[kept]["is_subscribed"] is True
    assert "deleted" not in items[kept]
    assert items[unsubscribed]["is_subscribed"] is False
    assert "deleted" not in items[unsubscribed]
    assert items[deleted]["is_subscribed"] is False
    assert items[deleted]["deleted"] == clock.stamp


def test_another_users_items_never_appear(api, other_api, user, other_user):
    mine = add(api, *feeds(3))
    add(other_api, *feeds(5))  # the same feeds, and more
    add(other_api, "https://other.example.com/only-theirs")

    items, pages = walk(api, per_page=2)

    assert sorted(item["guid"] for item in items) == sorted(mine)
    assert {page["total"] for page in pages} == {3}
    assert listing(other_api)["total"] == 6


def test_another_users_changes_do_not_reach_my_since(api, other_api, clock):
    add(api, "https://example.com/mine")
    since = clock.stamp
    clock.advance(seconds=1)
    add(other_api, "https://example.com/mine", "https://example.com/theirs")

    assert listing(api, since=since)["total"] == 0


# --- pages -------------------------------------------------------------------------------------


def test_walking_next_sees_every_item_exactly_once(api):
    guids = add(api, *feeds(120))

    items, pages = walk(api, per_page=50)

    assert [item["guid"] for item in items] == guids  # creation order
    assert [len(page["subscriptions"]) for page in pages] == [50, 50, 20]
    assert [page["page"] for page in pages] == [1, 2, 3]
    assert {page["total"] for page in pages} == {120}
    assert {page["per_page"] for page in pages} == {50}
    assert "previous" not in pages[0]
    assert "next" not in pages[-1]


def test_next_and_previous_are_absolute_and_keep_the_other_parameters(api, clock):
    since = "2020-01-01T00:00:00.000Z"
    add(api, *feeds(7))

    body = listing(api, since=since, per_page=3, page=2)

    for link, page in ((body["next"], "3"), (body["previous"], "1")):
        parts = urlsplit(link)
        assert (parts.scheme, parts.netloc, parts.path) == ("http", "testserver", LIST)
        assert parse_qs(parts.query) == {"since": [since], "per_page": ["3"], "page": [page]}


def test_walking_back_with_previous_sees_the_same_pages(api):
    add(api, *feeds(10))
    _, forward = walk(api, per_page=4)

    backward = [forward[-1]]
    while "previous" in backward[-1]:
        backward.append(api.get(backward[-1]["previous"]).json())

    assert backward[::-1] == forward


def test_a_change_while_walking_skips_no_item(api, clock):
    """Creation order never moves an item, so a change between two pages loses nothing."""
    since = clock.stamp
    clock.advance(seconds=1)
    guids = add(api, *feeds(10))
    first = listing(api, since=since, per_page=4)
    clock.advance(seconds=1)
    patch(api, guids[0], {"is_subscribed": False})  # an item of the page already read
    add(api, "https://example.com/added-meanwhile")

    rest, _ = walk(api, since=since, per_page=4, page=2)

    seen = [item["guid"] for item in first["subscriptions"] + rest]
    assert set(guids) <= set(seen)


def test_page_past_the_end_is_empty_and_leads_back_to_the_last_page(api):
    add(api, *feeds(5))

    body = listing(api, per_page=2, page=9)

    assert body["subscriptions"] == []
    assert (body["total"], body["page"], body["per_page"]) == (5, 9, 2)
    assert "next" not in body
    assert parse_qs(urlsplit(body["previous"]).query)["page"] == ["3"]


def test_largest_page_number_is_valid(api):
    add(api, *feeds(2))

    body = listing(api, page=2**63 - 1)

    assert body["subscriptions"] == []
    assert body["page"] == 2**63 - 1


@pytest.mark.parametrize(("per_page", "expected"), [("1", 1), ("500", 500), ("25.0", 25)])
def test_per_page_within_bounds(api, per_page, expected):
    add(api, *feeds(3))

    body = listing(api, per_page=per_page)

    assert body["per_page"] == expected
    assert len(body["subscriptions"]) == min(expected, 3)


@pytest.mark.parametrize("page", ["2.0", "2.000", "02", "0000000000000000000000002"])
def test_page_written_with_a_zero_fraction_or_leading_zeros_is_that_page(api, page):
    add(api, *feeds(3))

    assert listing(api, per_page=1, page=page)["page"] == 2


def test_per_page_above_the_limit_is_405_naming_it(api):
    response = api.get(LIST, {"per_page": 501})

    body = assert_error(response, 405, "Input could not be validated: per_page must be at most 500")
    assert set(body["errors"]) == {"per_page"}


BAD_INTEGERS = [
    *("0", "-1", "1.5", "1.", "abc", "", " 2", "2 ", "2\n", "0x10", "1e2", "NaN", "true"),
    "\u0662",  # ARABIC-INDIC DIGIT TWO
    "9" * 5000,
]


@pytest.mark.parametrize("parameter", ["page", "per_page"])
@pytest.mark.parametrize("value", BAD_INTEGERS)
def test_bad_page_or_per_page_is_405_naming_it(api, parameter, value):
    add(api, "https://example.com/feed")

    body = assert_error(api.get(LIST, {parameter: value}), 405)

    assert body["message"].startswith(f"Input could not be validated: {parameter} ")
    assert set(body["errors"]) == {parameter}


def test_page_beyond_63_bits_is_405(api):
    body = assert_error(api.get(LIST, {"page": str(2**63)}), 405)

    assert set(body["errors"]) == {"page"}


@pytest.mark.parametrize("parameter", ["since", "page", "per_page"])
def test_a_parameter_given_twice_is_405(api, parameter):
    value = "2024-01-01T00:00:00Z" if parameter == "since" else "1"

    body = assert_error(api.get(f"{LIST}?{parameter}={value}&{parameter}={value}"), 405)

    message = f"Input could not be validated: {parameter} must be given at most once"
    assert body["message"] == message


@pytest.mark.parametrize("query", ["snice=2024-01-01T00:00:00Z", "=null", "page=1&x", "Since=x"])
def test_unknown_parameter_is_405_naming_it(api, query):
    body = assert_error(api.get(f"{LIST}?{query}"), 405)

    assert body["message"].startswith("Input could not be validated: unknown query parameter ")
    assert len(body["errors"]) == 1


# --- since ------------------------------------------------------------------------------------


def test_without_since_every_subscription_is_listed(api, clock):
    add(api, *feeds(3))

    assert listing(api)["total"] == 3


def test_since_lists_only_subscriptions_changed_later(api, clock):
    _, changed = add(api, *feeds(2))
    since = clock.stamp
    clock.advance(seconds=1)
    patch(api, changed, {"is_subscribed": False})
    [added] = add(api, "https://example.com/new")

    body = listing(api, since=since)

    assert [item["guid"] for item in body["subscriptions"]] == [changed, added]
    assert body["total"] == 2


def test_since_by_subscription_changed(api, clock):
    [guid] = add(api, "https://example.com/feed")
    since = clock.stamp
    clock.advance(milliseconds=1)
    patch(api, guid, {"new_feed_url": "https://example.com/moved"})

    [item] = listing(api, since=since)["subscriptions"]

    assert item["feed_url"] == "https://example.com/moved"
    assert item["subscription_changed"] == clock.stamp


def test_since_by_guid_changed(api, clock):
    [guid] = add(api, "https://example.com/feed")
    since = clock.stamp
    clock.advance(milliseconds=1)
    newer = str(uuid.uuid4())
    patch(api, guid, {"new_guid": newer})

    [item] = listing(api, since=since)["subscriptions"]

    assert (item["guid"], item["new_guid"], item["guid_changed"]) == (guid, newer, clock.stamp)
    assert item["subscription_changed"] <= since  # only the guid change is later


def test_since_by_deleted(api, clock, django_capture_on_commit_callbacks):
    [guid] = add(api, "https://example.com/feed")
    since = clock.stamp
    clock.advance(milliseconds=1)
    # subscription_changed moves with the deletion too; the deletion alone must be enough.
    delete(api, guid, django_capture_on_commit_callbacks)
    Subscription.objects.update(subscription_changed=at(since))

    [item] = listing(api, since=since)["subscriptions"]

    assert item["deleted"] == clock.stamp
    assert item["is_subscribed"] is False


def test_since_equal_to_a_change_excludes_it(api, clock):
    """A timestamp the client got back, used as `since`, excludes what it has already seen."""
    [guid] = add(api, "https://example.com/feed")
    clock.advance(seconds=5)
    changed = patch(api, guid, {"is_subscribed": False})["subscription_changed"]

    assert listing(api, since=changed)["total"] == 0
    just_before = (at(changed) - timedelta(milliseconds=1)).isoformat()
    assert listing(api, since=just_before)["total"] == 1


def test_a_change_in_the_same_millisecond_as_the_last_is_still_later(api, clock):
    """A client that synced right after the first change still gets the second one."""
    [guid] = add(api, "https://example.com/feed")
    seen = listing(api)["subscriptions"][0]["subscription_changed"]

    patch(api, guid, {"is_subscribed": False})  # the clock has not moved

    [item] = listing(api, since=seen)["subscriptions"]
    assert item["subscription_changed"] > seen


def test_a_change_from_a_machine_whose_clock_is_behind_is_still_later(api, clock):
    [guid] = add(api, "https://example.com/feed")
    seen = clock.stamp
    clock.advance(seconds=-30)  # another web or worker machine, its clock 30 s behind

    changed = patch(api, guid, {"is_subscribed": False})["subscription_changed"]

    assert changed > seen
    assert listing(api, since=seen)["total"] == 1


@pytest.mark.parametrize(
    ("since", "listed"),
    [
        # The change is at 2024-02-23T14:00:00.123Z (the clock's start).
        ("2024-02-23T14:00:00.123Z", False),
        ("2024-02-23T14:00:00.122Z", True),
        ("2024-02-23T14:00:00Z", True),
        ("2024-02-23T14:00:00.1Z", True),
        ("2024-02-23T14:00:00.12299Z", True),
        ("2024-02-23T14:00:00.122999999Z", True),  # nanoseconds, below the change
        ("2024-02-23T14:00:00.123000001Z", False),  # nanoseconds, above it
        ("2024-02-23T14:00:00.123456789Z", False),
        ("2024-02-23T15:00:00.123+01:00", False),
        ("2024-02-23T15:00:00.122+01:00", True),
        ("2024-02-23T08:30:00.123-05:30", False),
        ("2024-02-23T08:30:00.122-05:30", True),
        ("2024-02-23T14:00:00.122-00:00", True),
        ("2024-02-23t14:00:00.122z", True),  # RFC 3339 allows lower case
        ("2024-02-23 14:00:00.122Z", True),  # and a space for the T
        ("2024-02-23T15:00:00.122 01:00", True),  # an unencoded "+" arrives as a space
        ("2024-02-23T13:59:60Z", True),  # a leap second
        ("2024-02-23T14:00:00.124Z", False),
    ],
)
def test_since_precision_and_offsets(api, clock, since, listed):
    add(api, "https://example.com/feed")

    assert listing(api, since=since)["total"] == (1 if listed else 0)


@pytest.mark.parametrize(
    "since",
    [
        "",
        "yesterday",
        "1708696800",  # Unix time
        "2024-02-23",
        "2024-02-23T14:00:00",  # no offset: ambiguous
        "2024-02-23T14:00Z",  # no seconds
        "2024-02-23T14:00:00.Z",
        "2024-02-23T14:00:00+0100",
        "2024-02-23T14:00:00+01",
        "2024-02-23T14:00:00+24:00",
        "2024-13-01T00:00:00Z",
        "2024-02-30T00:00:00Z",
        "2024-02-23T25:00:00Z",
        "2024-02-23T14:61:00Z",
        "0000-01-01T00:00:00Z",
        "0001-01-01T00:00:00+01:00",  # before year 1 in UTC
        "9999-12-31T23:59:59-01:00",  # after year 9999 in UTC
        "2024-02-23T14:00:00Z\x00",
        "2024-02-23T14:00:00Z\n",
        "\n2024-02-23T14:00:00Z",
        "\uff12\uff10\uff12\uff14-02-23T14:00:00Z",  # full-width digits
        "2024-02-23T14:00:00Z" + "0" * 5000,
    ],
)
def test_bad_since_is_405_naming_it_and_changes_nothing(api, since):
    add(api, "https://example.com/feed")
    before = list(Subscription.objects.values())

    body = assert_error(api.get(LIST, {"since": since}), 405)

    assert body["message"].startswith("Input could not be validated: since ")
    assert set(body["errors"]) == {"since"}
    assert list(Subscription.objects.values()) == before


# --- guid resolution (the OPA get-all resolution example) -------------------------------------


@pytest.fixture
def resolution_example(api, clock):
    """The example's subscription, with its real timestamps."""
    clock.now = at("2022-03-21T18:45:35.513Z")
    add(api, "https://example.com/rss1", guid=GUID_A)
    clock.now = at("2022-03-21T19:00:00.000Z")
    patch(api, GUID_A, {"new_guid": GUID_B})
    clock.now = at("2022-12-23T10:24:14.670Z")
    patch(api, GUID_B, {"new_guid": GUID_C})


def test_resolution_without_since_lists_the_original_guid(api, resolution_example):
    body = listing(api, page=1, per_page=5)

    assert body == {
        "total": 1,
        "page": 1,
        "per_page": 5,
        "subscriptions": [
            {
                "feed_url": "https://example.com/rss1",
                "guid": GUID_A,
                "is_subscribed": True,
                "subscription_changed": "2022-03-21T18:45:35.513Z",
                "guid_changed": "2022-12-23T10:24:14.670Z",
                "new_guid": GUID_C,
            }
        ],
    }


def test_resolution_with_since_between_the_changes_lists_the_guid_at_since(api, resolution_example):
    body = listing(api, since="2022-05-30T00:00:00.000Z", page=1, per_page=5)

    [item] = body["subscriptions"]
    assert (item["guid"], item["new_guid"]) == (GUID_B, GUID_C)
    assert item["guid_changed"] == "2022-12-23T10:24:14.670Z"


@pytest.mark.parametrize(
    ("since", "guid"),
    [
        ("2022-01-01T00:00:00.000Z", GUID_A),  # before the subscription existed
        ("2022-03-21T18:45:35.513Z", GUID_A),  # the moment it was added
        ("2022-03-21T18:59:59.999Z", GUID_A),
        ("2022-03-21T19:00:00.000Z", GUID_B),  # the moment of the first change
        ("2022-12-23T10:24:14.669Z", GUID_B),
    ],
)
def test_resolution_at_each_edge(api, resolution_example, since, guid):
    [item] = listing(api, since=since)["subscriptions"]

    assert (item["guid"], item["new_guid"]) == (guid, GUID_C)


def test_resolution_after_the_last_change_lists_nothing(api, resolution_example):
    assert listing(api, since="2022-12-23T10:24:14.670Z")["total"] == 0


def test_new_guid_only_when_it_differs(api, resolution_example, clock):
    clock.advance(seconds=1)
    since = clock.stamp
    clock.advance(seconds=1)
    patch(api, GUID_C, {"is_subscribed": False})

    [item] = listing(api, since=since)["subscriptions"]

    assert item["guid"] == GUID_C
    assert "new_guid" not in item


def test_a_guid_sent_in_an_add_counts_as_a_change(api, clock):
    [computed] = add(api, "https://example.com/feed")
    since = clock.stamp
    clock.advance(seconds=1)
    sent = str(uuid.uuid4())
    add(api, "https://example.com/feed", guid=sent)

    [item] = listing(api, since=since)["subscriptions"]

    assert (item["guid"], item["new_guid"]) == (computed, sent)


def test_merge_lists_the_merged_guid_as_replaced_by_the_survivor(api, clock):
    """Two subscriptions become one: the client learns which guid became which."""
    clock.now = at("2024-01-01T00:00:00.000Z")
    [older] = add(api, "https://example.com/older")
    clock.now = at("2024-01-02T00:00:00.000Z")
    [newer] = add(api, "https://example.com/newer")
    since = "2024-01-03T00:00:00.000Z"
    clock.now = at("2024-01-04T00:00:00.000Z")
    patch(api, newer, {"new_guid": older})  # newer is merged into older

    body = listing(api, since=since)

    assert body["total"] == 1
    [item] = body["subscriptions"]
    assert (item["guid"], item["new_guid"]) == (newer, older)
    assert item["guid_changed"] == "2024-01-04T00:00:00.000Z"
    assert listing(api)["subscriptions"][0]["guid"] == older  # the original guid


def test_merge_by_feed_url_lists_the_merged_guid(api, clock):
    [kept, moved] = add(api, "https://example.com/kept", "https://example.com/moved")
    since = clock.stamp
    clock.advance(seconds=1)
    patch(api, kept, {"new_feed_url": "https://example.com/moved"})  # moved merges into kept

    [item] = listing(api, since=since)["subscriptions"]

    assert (item["guid"], item["new_guid"]) == (moved, kept)
    assert item["feed_url"] == "https://example.com/moved"


def test_several_guids_replaced_since_lists_the_one_replaced_first(api, clock):
    [merged, survivor] = add(api, "https://example.com/a", "https://example.com/x")
    since = clock.stamp
    clock.advance(seconds=1)
    renamed = patch(api, survivor, {"new_guid": str(uuid.uuid4())})["new_guid"]
    clock.advance(seconds=1)
    patch(api, merged, {"new_guid": renamed})  # merged into the survivor

    [item] = listing(api, since=since)["subscriptions"]

    assert (item["guid"], item["new_guid"]) == (survivor, renamed)
    # The other old guid still reaches the survivor.
    assert api.get(f"{LIST}/{merged}").json()["new_guid"] == renamed


def test_replaced_is_recorded_for_each_guid_that_stops_being_current(api, clock):
    [first] = add(api, "https://example.com/feed")
    clock.advance(seconds=1)
    second = patch(api, first, {"new_guid": str(uuid.uuid4())})["new_guid"]

    rows = {str(row.guid): row.replaced for row in SubscriptionGuid.objects.all()}

    assert rows == {first: clock.now, second: None}


# --- cost -------------------------------------------------------------------------------------


@pytest.mark.parametrize("since", [None, "2000-01-01T00:00:00Z"])
@pytest.mark.parametrize(("subscriptions", "per_page", "history"), [(1, 1, 0), (60, 500, 12)])
def test_a_page_costs_a_fixed_number_of_queries(
    api, clock, django_assert_max_num_queries, since, subscriptions, per_page, history
):
    guids = add(api, *feeds(subscriptions))
    for _ in range(history):
        clock.advance(seconds=1)
        guids[0] = patch(api, guids[0], {"new_guid": str(uuid.uuid4())})["new_guid"]
    params = {"per_page": per_page} if since is None else {"per_page": per_page, "since": since}

    # The user, then the page and its count in one query.
    with django_assert_max_num_queries(2):
        body = listing(api, **params)

    assert len(body["subscriptions"]) == subscriptions


@pytest.mark.postgresql
def test_a_list_query_reads_only_the_users_own_index_entries(transactional_db):
    """The list's query reads no table whole, nor another user's rows; page 1 of the 50 items
    changed since, wherever they are, reads 50 of the user's 10,000."""
    from subscriptions import selectors

    users = UserFactory.create_batch(3)
    me = users[0]
    start = datetime(2024, 1, 1, tzinfo=UTC)
    subs = [  # interleaved, as users add subscriptions at the same time
        Subscription(
            user=user,
            guid=uuid.uuid4(),
            feed_url=f"https://example.com/{i}",
            subscription_changed=start + timedelta(minutes=i),
            created=start,
        )
        for i in range(10_000)
        for user in users
    ]
    Subscription.objects.bulk_create(subs, batch_size=3000)
    SubscriptionGuid.objects.bulk_create(
        [SubscriptionGuid(user=s.user, subscription=s, guid=s.guid, assigned=start) for s in subs],
        batch_size=3000,
    )
    later = start + timedelta(days=30)  # after all of the above: every 200th of mine changes
    spread = [s.pk for s in subs if s.user == me][::200]
    Subscription.objects.filter(pk__in=spread).update(subscription_changed=later)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    mine = {str(s.guid) for s in subs if s.user == me}
    last_50 = start + timedelta(minutes=10_000 - 51)
    everything = start - timedelta(days=1)

    cases = {
        "page 1 of the last 50 and the 50 spread": (last_50, 0, 100),
        "page 1 of 50 changed, spread over the 10,000": (later - timedelta(days=1), 0, 50),
        "page 100 of all changed": (everything, 4950, 10_000),
        "last page without since": (None, 9950, 10_000),
    }
    for name, (since, offset, most) in cases.items():
        plan, (total, items) = plan_of(
            functools.partial(
                selectors.subscription_list, user=me, since=since, offset=offset, limit=50
            )
        )
        read = [
            node.get("Actual Rows", 0) + node.get("Rows Removed by Filter", 0)
            for node in nodes(plan)
            if node.get("Relation Name") == Subscription._meta.db_table
            or node.get("Index Name", "").startswith("subscription_")
        ]
        why = (name, json.dumps(plan, indent=1))  # the whole plan, should one fail
        assert not any(node["Node Type"] == "Seq Scan" for node in nodes(plan)), why
        assert read, why
        assert max(read) <= most, (read, *why)
        assert total == most
        assert len(items) == 50
        assert {item.guid for item in items} <= mine
