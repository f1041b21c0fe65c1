"""While the database cannot serve, every request is answered 503 with Retry-After and the
error object (docs/api.md, "Errors"), never a 500; and the service answers again as soon as the
database is back. Real PostgreSQL: the connection is pointed at a port nobody listens on, or the
table a request reads is locked past the statement timeout."""

import json
from typing import Any

import psycopg
import pytest
from django.db import connection
from django.test import Client
from rest_framework.test import APIClient

from tests.factories import UserFactory
from tests.helpers import AWAY, PASSWORD, away_answer, basic, database_away, subscribe

# The database server stopped, stalled or out of connections: PostgreSQL's.
pytestmark = [pytest.mark.postgresql, pytest.mark.usefixtures("transactional_db")]

FEED = "https://example.com/feed.xml"


def test_every_kind_of_request_is_a_503_while_the_database_is_away(api, user):
    gpodder_user: Any = UserFactory(username="alice", with_password=PASSWORD)
    guid = subscribe(user, FEED).guid
    gpodder = APIClient()
    gpodder.credentials(HTTP_AUTHORIZATION=basic("alice"))
    gpodder.get("/api/2/devices/alice.json")  # the credentials are remembered
    staff: Any = UserFactory(is_staff=True, is_superuser=True)
    # The test client would raise what the server turned into an answer: the answer is tested.
    admin = Client(raise_request_exception=False)
    admin.force_login(staff)
    api.get(f"/v1/subscriptions/{guid}")  # the token's user is remembered

    with database_away():
        away_answer(api.get(f"/v1/subscriptions/{guid}"), AWAY)
        away_answer(api.get("/v1/subscriptions"), AWAY)
        away_answer(
            api.post("/v1/subscriptions", {"subscriptions": [{"feed_url": FEED}]}, format="json"),
            AWAY,
        )
        away_answer(api.delete(f"/v1/subscriptions/{guid}"), AWAY)
        away_answer(
            APIClient().post(
                "/v1/auth/login", {"username": user.username, "password": "x"}, format="json"
            ),
            AWAY,
        )
        away_answer(gpodder.get("/api/2/subscriptions/alice/phone.json?since=0"), AWAY)
        away_answer(
            gpodder.post(
                "/api/2/episodes/alice.json",
                json.dumps([{"podcast": FEED, "episode": "e", "action": "new"}]),
                content_type="application/json",
            ),
            AWAY,
        )
        page = admin.get("/admin/subscriptions/subscription/")
        assert page.status_code == 503
        assert page["Retry-After"] == "5"
        assert AWAY in page.content.decode()
        health = Client().get("/health")
        assert health.status_code == 503
        assert health.json()["database"].startswith("error:")

    # Back: the next requests are served, and nothing was written meanwhile.
    assert api.get(f"/v1/subscriptions/{guid}").status_code == 200
    assert api.get("/v1/subscriptions").json()["total"] == 1
    assert gpodder.get("/api/2/subscriptions/alice/phone.json?since=0").status_code == 200
    assert Client().get("/health").status_code in (200, 503)  # the broker is not checked here
    assert gpodder_user.episode_actions.count() == 0


def test_a_statement_the_database_does_not_answer_in_time_is_a_503(api, user):
    subscribe(user, FEED)
    api.get("/v1/subscriptions")  # the token's user is remembered
    settings = connection.settings_dict
    locker = psycopg.connect(
        host=settings["HOST"],
        port=settings["PORT"],
        user=settings["USER"],
        password=settings["PASSWORD"],
        dbname=settings["NAME"],
    )
    options = dict(settings["OPTIONS"])
    try:
        connection.close()
        settings["OPTIONS"] = {**options, "options": "-c statement_timeout=300"}
        locker.execute("LOCK TABLE subscriptions_subscription IN ACCESS EXCLUSIVE MODE")

        away_answer(
            api.get("/v1/subscriptions"),
            "Service unavailable: the database did not answer in time",
        )
    finally:
        locker.rollback()
        locker.close()
        connection.close()
        settings["OPTIONS"] = options
    assert api.get("/v1/subscriptions").status_code == 200


def test_a_database_out_of_connections_is_a_503(api, user):
    """Connections refused for want of a free one (SQLSTATE 53300), as with max_connections
    reached: here a role whose connection limit is 0, which PostgreSQL refuses the same way."""
    api.get("/v1/subscriptions")  # the token's user is remembered
    settings = connection.settings_dict
    with connection.cursor() as cursor:
        cursor.execute("CREATE ROLE soak_full LOGIN CONNECTION LIMIT 0")
        cursor.execute(f'GRANT ALL ON DATABASE "{settings["NAME"]}" TO soak_full')
    user_name = settings["USER"]
    try:
        connection.close()
        settings["USER"] = "soak_full"
        away_answer(
            api.get("/v1/subscriptions"), "Service unavailable: the database has no free connection"
        )
    finally:
        connection.close()
        settings["USER"] = user_name
        with connection.cursor() as cursor:
            cursor.execute(f'REVOKE ALL ON DATABASE "{settings["NAME"]}" FROM soak_full')
            cursor.execute("DROP ROLE soak_full")
    assert api.get("/v1/subscriptions").status_code == 200
