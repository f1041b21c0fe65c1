"""Fixtures of the pages' tests: a person with a password, signed in through the sign-in page."""

from typing import Any

import pytest
from django.test import Client

from episodes import services as episodes
from episodes.actions import actions_parsed
from tests.factories import UserFactory

PASSWORD = "a long and unusual passphrase 7"


@pytest.fixture
def person(db: None) -> Any:
    return UserFactory(username="alice", with_password=PASSWORD)


@pytest.fixture
def stranger(db: None) -> Any:
    return UserFactory(username="mallory", with_password=PASSWORD)


@pytest.fixture
def page(person: Any) -> Client:
    """A browser signed in as `person` (Django's session, as the sign-in page makes it)."""
    client = Client()
    client.force_login(person)
    return client


def upload_actions(user: Any, actions: list[dict[str, Any]]) -> None:
    """Episode actions stored as an app's upload stores them."""
    episodes.actions_upload(user=user, actions=actions_parsed(actions, limit=10_000))
