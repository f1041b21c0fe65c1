"""Fixtures of the Nextcloud paths' tests: alice and bob with a password (the gpodder tests'),
apps that send Basic on every request, and reading an answer, streamed or not."""

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.services import app_password_create
from nextcloud.services import app_device_ids
from tests.gpodder.conftest import PASSWORD, _forget_credentials, alice, bob, plain_http_cookies

__all__ = ["PASSWORD", "_forget_credentials", "alice", "bob", "plain_http_cookies"]

APP = "/index.php/apps/gpoddersync"


def basic(username: str, password: str = PASSWORD, encoding: str = "utf-8") -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode(encoding)).decode()


def nextcloud_client(username: str, password: str = PASSWORD) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=basic(username, password))
    return client


def body(response: Any) -> Any:
    """The JSON of an answer, streamed (the actions' download) or not."""
    if response.streaming:
        return json.loads(b"".join(response.streaming_content))
    return json.loads(response.content)


def app_password(user: Any, name: str) -> tuple[int, str]:
    found, secret = app_password_create(user=user, name=name)
    return found.pk, secret


@pytest.fixture(autouse=True)
def _forget_app_devices() -> Iterator[None]:
    app_device_ids.clear()
    yield
    app_device_ids.clear()


@pytest.fixture
def nc(alice: Any) -> APIClient:
    """An app of alice's on her own password."""
    return nextcloud_client("alice")
