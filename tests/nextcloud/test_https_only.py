"""Where the service requires HTTPS (SECURE_SSL_REDIRECT), a Nextcloud path over plain HTTP is
answered, never redirected: the apps follow a redirected POST as a GET with no body."""

from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.helpers import assert_error, basic

PATHS = [
    ("post", "/index.php/login/v2"),
    ("post", "/login/v2/poll"),
    ("get", "/index.php/apps/gpoddersync/subscriptions?since=0"),
    ("post", "/apps/gpoddersync/episode_action/create"),
]


@pytest.fixture
def https_required(settings: Any) -> None:
    settings.SECURE_SSL_REDIRECT = True


@pytest.mark.usefixtures("https_required")
@pytest.mark.parametrize(("method", "path"), PATHS)
def test_plain_http_is_a_403_naming_the_rule(alice: Any, method: str, path: str) -> None:
    client = APIClient(HTTP_AUTHORIZATION=basic("alice"))
    response = getattr(client, method)(path)
    body = assert_error(response, 403)
    assert "HTTPS only (SECURE_SSL_REDIRECT)" in body["message"]
    assert response["Cache-Control"] == "no-store"


@pytest.mark.usefixtures("https_required")
def test_https_through_the_proxy_header_is_served(alice: Any) -> None:
    client = APIClient(HTTP_AUTHORIZATION=basic("alice"), HTTP_X_FORWARDED_PROTO="https")
    assert client.get("/index.php/apps/gpoddersync/subscriptions?since=0").status_code == 200
    assert client.post("/index.php/login/v2").status_code == 200


@pytest.mark.usefixtures("https_required")
def test_other_paths_are_still_redirected(alice: Any) -> None:
    assert APIClient().get("/v1/capabilities").status_code == 301
    assert APIClient().get("/login/").status_code == 301
