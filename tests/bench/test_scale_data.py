"""`make scale`'s data set (bench/scale_data.py), loaded into the test database at a few
accounts: the service reads it as rows it wrote itself (the same keys, guids and histories),
and the load leaves every index and constraint as the migrations made them."""

from base64 import b64encode
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client

from accounts.services import refresh_token_for
from bench import scale_data as data
from episodes.models import EpisodeAction

SHAPE = data.Shape(accounts=50, feeds=100)


def schema() -> list[tuple[str, str]]:
    """Every index and constraint of the loaded tables, with its definition."""
    tables = [table for table, _, _ in data.TABLES]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = ANY(%s) "
            "UNION ALL SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE conrelid::regclass::text = ANY(%s) ORDER BY 1, 2",
            [tables, tables],
        )
        return cursor.fetchall()


@pytest.fixture
def loaded(transactional_db: None) -> dict[str, Any]:
    before = schema()
    settings = connection.settings_dict
    dsn = (
        f"postgresql://{settings['USER']}@{settings['HOST']}:{settings['PORT']}/{settings['NAME']}"
    )
    tables = {t.table: t.rows for t in data.load(dsn, SHAPE)}
    return {"before": before, "tables": tables}


def test_every_table_has_its_rows_and_its_indexes_and_constraints_again(loaded):
    assert schema() == loaded["before"]
    with connection.cursor() as cursor:
        for table, rows in SHAPE.rows().items():
            cursor.execute(f"SELECT count(*) FROM {table}")
            assert cursor.fetchone()[0] == rows, table
        # The foreign keys hold, though their triggers were off during the load.
        cursor.execute(
            "SELECT count(*) FROM episodes_episodeaction a "
            "LEFT JOIN gpodder_device d ON d.id = a.device_id AND d.user_id = a.user_id "
            "WHERE d.id IS NULL"
        )
        assert cursor.fetchone()[0] == 0
    # The next row written gets the next id.
    user = get_user_model().objects.create_user("after-the-load", password="x" * 20)
    assert user.pk == SHAPE.accounts + 1


def test_the_api_reads_an_account_as_it_would_have_written_it(loaded):
    account = SHAPE.accounts  # divisible by 5 and 10: a deleted subscription, an app password
    user = get_user_model().objects.get(pk=account)
    api = Client(HTTP_AUTHORIZATION=f"Bearer {refresh_token_for(user).access_token}")

    listed = api.get("/v1/subscriptions", {"per_page": "50"}).json()["subscriptions"]
    # Without `since`, each under its first guid, and the one whose guid changed with the new.
    earlier = data.subscription_guid(account, 0, earlier=True)
    assert {s["guid"] for s in listed} == {earlier} | {
        data.subscription_guid(account, k) for k in range(1, data.SUBSCRIPTIONS)
    }
    assert [s["new_guid"] for s in listed if s["guid"] == earlier] == [
        data.subscription_guid(account, 0)
    ]
    # The earlier guid and the earlier feed URL still lead to their subscription.
    found = api.get(f"/v1/subscriptions/{earlier}").json()
    assert found["new_guid"] == data.subscription_guid(account, 0)
    moved = data.feed_url(SHAPE.feed_of(account, 1))
    added = api.post(
        "/v1/subscriptions",
        {"subscriptions": [{"feed_url": data.earlier_feed_url(SHAPE.feed_of(account, 1))}]},
        content_type="application/json",
    ).json()
    assert [s["feed_url"] for s in added["success"]] == [moved], "known by its earlier URL"
    deleted = [s for s in listed if s["guid"] == data.subscription_guid(account, 8)]
    assert deleted[0]["deleted"], "deleted through a deletion that succeeded"

    basic = b64encode(f"{data.username(account)}:{data.PASSWORD}".encode()).decode()
    app = Client(HTTP_AUTHORIZATION=f"Basic {basic}")
    actions = app.get(f"/api/2/episodes/{data.username(account)}.json", {"since": 0}).json()
    assert len(actions["actions"]) == data.ACTIONS
    assert {a["device"] for a in actions["actions"]} == {"phone", "laptop"}
    pulled = app.get(f"/api/2/subscriptions/{data.username(account)}/phone.json?since=0").json()
    assert len(pulled["add"]) == 8  # 10, less the unsubscribed and the deleted


def test_the_history_names_each_episode_from_its_feeds_catalogue(loaded):
    account = 7
    page = Client()
    page.force_login(get_user_model().objects.get(pk=account))
    body = page.get("/history/").content.decode()
    feed = SHAPE.feed_of(account, 1)  # the moved feed: action 1 under its earlier URL
    assert f"Episode {(1 // 10 + account) % data.LISTENED} of show {feed}" in body
    assert f"Episode {(11 // 10 + account) % data.LISTENED} of show {feed}" in body
    assert body.count(" of show ") >= data.SUBSCRIPTIONS


def test_an_app_sending_a_loaded_action_again_adds_nothing(loaded):
    """Each action's identity is the one the service computes on upload."""
    account, j = 7, 1
    feed = SHAPE.feed_of(account, 1)
    received = data.T0 + timedelta(seconds=data.action_received(account, j))
    again = {
        "podcast": data.earlier_feed_url(feed),
        "episode": data.episode_url(feed, (j // 10 + account) % data.LISTENED),
        "action": "play",
        "timestamp": (received - timedelta(seconds=10)).strftime("%Y-%m-%dT%H:%M:%S"),
        "device": "laptop",
        "started": 0,
        "position": 60 * j,
        "total": 1800,
    }
    basic = b64encode(f"{data.username(account)}:{data.PASSWORD}".encode()).decode()
    app = Client(HTTP_AUTHORIZATION=f"Basic {basic}")
    sent = app.post(f"/api/2/episodes/{data.username(account)}.json", [again],
                    content_type="application/json")  # fmt: skip
    assert sent.status_code == 200
    assert EpisodeAction.objects.filter(user_id=account).count() == data.ACTIONS
