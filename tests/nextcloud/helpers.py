"""What the Nextcloud paths' tests share: the app's prefix, apps that send Basic on every
request, and reading an answer, streamed or not."""

import json
from typing import Any

from rest_framework.test import APIClient

from accounts.services import app_password_create
from tests.helpers import PASSWORD, basic

APP = "/index.php/apps/gpoddersync"


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
