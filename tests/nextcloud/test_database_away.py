"""While the database cannot serve, the Nextcloud paths answer 503 with the error object and
Retry-After, never a 500 (docs/nextcloud.md, "Errors and limits")."""

import json
from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.helpers import AWAY, away_answer, database_away
from tests.nextcloud.helpers import APP

pytestmark = pytest.mark.usefixtures("transactional_db")


@pytest.mark.postgresql
def test_every_path_is_a_503_while_the_database_is_away(nc: APIClient, alice: Any) -> None:
    nc.get(f"{APP}/subscriptions")  # the credentials are remembered
    play = {"podcast": "https://e.example/f", "episode": "e1", "action": "play", "position": 1}
    with database_away():
        for response in (
            nc.get(f"{APP}/subscriptions?since=0"),
            nc.get(f"{APP}/episode_action?since=0"),
            nc.post(
                f"{APP}/subscription_change/create",
                data=json.dumps({"add": ["https://e.example/f"]}),
                content_type="application/json",
            ),
            nc.post(
                f"{APP}/episode_action/create",
                data=json.dumps([play]),
                content_type="application/json",
            ),
        ):
            away_answer(response, AWAY)
            assert response["Cache-Control"] == "no-store"
    assert nc.get(f"{APP}/episode_action?since=0").status_code == 200
