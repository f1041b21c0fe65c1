"""Fixtures of the gpodder API's tests: an account with a password, and Basic credentials."""

import base64
from typing import Any

import pytest
from rest_framework.test import APIClient

from gpodder.authentication import credentials
from tests.factories import UserFactory

PASSWORD = "correct horse battery staple"


def basic(username: str, password: str = PASSWORD) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


@pytest.fixture(autouse=True)
def _forget_credentials() -> Any:
    credentials.clear()
    yield
    credentials.clear()


@pytest.fixture
def alice(db: None) -> Any:
    return UserFactory(username="alice", with_password=PASSWORD)


@pytest.fixture
def bob(db: None) -> Any:
    return UserFactory(username="bob", with_password=PASSWORD)


@pytest.fixture
def app(alice: Any) -> APIClient:
    """A gpodder app of alice's that sends Basic on every request (as Kasts does)."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=basic("alice"))
    return client


@pytest.fixture
def plain_http_cookies(settings: Any) -> None:
    """A live server speaks plain HTTP: a cookie marked Secure would not come back."""
    settings.SESSION_COOKIE_SECURE = False
