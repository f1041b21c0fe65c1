"""A browser on the API paths that take HTTP Basic (api.browsers; docs/gpodder-api.md,
"Browsers"): never asked for credentials, so it never keeps them; and a request another site
made it send is refused before any credential it carries is read. Apps, which send no Fetch
Metadata and no Origin, are answered exactly as before."""

import base64
import json
from typing import Any

import pytest
from rest_framework.test import APIClient

from gpodder.models import Device
from subscriptions.models import Subscription
from tests.factories import UserFactory
from tests.helpers import assert_error

PASSWORD = "correct horse battery staple"
REALM = 'Basic realm="opa-subscriptions"'
GPODDER = "/api/2/subscriptions/alice/phone.json"
NEXTCLOUD = "/index.php/apps/gpoddersync/subscription_change/create"
CHANGE = json.dumps({"add": ["https://example.com/feed"], "remove": []})

# What browsers send when the person opens an API address (typed, or a link followed) ...
NAVIGATION: dict[str, Any] = {
    "HTTP_ACCEPT": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
    "HTTP_SEC_FETCH_SITE": "none",
    "HTTP_SEC_FETCH_MODE": "navigate",
    "HTTP_SEC_FETCH_DEST": "document",
    "HTTP_SEC_FETCH_USER": "?1",
}
# ... and a browser without Fetch Metadata (an old one, or over plain HTTP).
OLD_NAVIGATION: dict[str, Any] = {"HTTP_ACCEPT": "text/html,application/xhtml+xml,*/*;q=0.8"}
# A form of another site posted to the API, as `text/plain` so its body is the JSON it wrote.
CROSS_SITE_FORM: dict[str, Any] = {
    "HTTP_ACCEPT": "text/html,application/xhtml+xml,*/*;q=0.8",
    "HTTP_ORIGIN": "https://evil.example",
    "HTTP_SEC_FETCH_SITE": "cross-site",
    "HTTP_SEC_FETCH_MODE": "navigate",
    "HTTP_SEC_FETCH_DEST": "document",
}
# What the apps send (their own code): mygpoclient (urllib, JSON labelled as a form), AntennaPod
# (OkHttp; Accept on the Nextcloud paths), Kasts (Qt).
APPS: list[dict[str, Any]] = [
    {"HTTP_USER_AGENT": "mygpoclient/1.10 (+https://gpodder.org/mygpoclient/)"},
    {"HTTP_USER_AGENT": "AntennaPod/3.5.0", "HTTP_ACCEPT": "application/json"},
    {"HTTP_USER_AGENT": "Mozilla/5.0", "HTTP_ACCEPT_LANGUAGE": "en-US,*"},
]


@pytest.fixture
def alice(db: None) -> Any:
    return UserFactory(username="alice", with_password=PASSWORD)


def basic(password: str = PASSWORD) -> str:
    return "Basic " + base64.b64encode(f"alice:{password}".encode()).decode()


# --- No 401 asks a browser for credentials --------------------------------------------------


@pytest.mark.parametrize("browser", [NAVIGATION, OLD_NAVIGATION], ids=["fetch-metadata", "old"])
@pytest.mark.parametrize(
    ("path", "credentials_sent"),
    [
        ("/api/2/devices/alice.json", None),
        ("/subscriptions/alice.json", None),
        ("/index.php/apps/gpoddersync/subscriptions?since=0", None),
        ("/api/2/devices/alice.json", basic("wrong")),
        ("/index.php/apps/gpoddersync/subscriptions?since=0", basic("wrong")),
        ("/api/2/devices/bob.json", basic()),  # another user's path
    ],
)
def test_a_browsers_401_has_no_challenge(
    alice: Any, browser: dict[str, Any], path: str, credentials_sent: str | None
) -> None:
    headers: dict[str, Any] = {"HTTP_AUTHORIZATION": credentials_sent} if credentials_sent else {}
    response = APIClient().get(path, **browser, **headers)

    assert_error(response, 401)
    assert "WWW-Authenticate" not in response


@pytest.mark.parametrize("app", APPS)
@pytest.mark.parametrize(
    "path",
    ["/api/2/devices/alice.json", "/index.php/apps/gpoddersync/subscriptions?since=0"],
)
def test_an_apps_401_still_asks_for_basic_with_the_realm(
    alice: Any, app: dict[str, Any], path: str
) -> None:
    no_credentials: dict[str, Any] = {}
    for headers in (no_credentials, {"HTTP_AUTHORIZATION": basic("wrong")}):
        response = APIClient().get(path, **app, **headers)
        assert_error(response, 401)
        assert response["WWW-Authenticate"] == REALM


def test_the_v1_bearer_challenge_is_unchanged_for_a_browser(db: None) -> None:
    """A browser never asks for a bearer token: the challenge stays."""
    response = APIClient().get("/v1/subscriptions", **NAVIGATION)
    assert_error(response, 401)
    assert response["WWW-Authenticate"].startswith("Bearer")


# --- What another site makes a browser send is refused ------------------------------------------


@pytest.mark.parametrize(
    "browser",
    [
        CROSS_SITE_FORM,
        {**CROSS_SITE_FORM, "HTTP_SEC_FETCH_SITE": "same-site"},
        # A browser without Fetch Metadata (over plain HTTP, or an old one): its Origin tells.
        {"HTTP_ORIGIN": "https://evil.example", "HTTP_ACCEPT": "text/html"},
        {"HTTP_ORIGIN": "null"},
        {"HTTP_ORIGIN": "https://testserver"},  # not the scheme the request came over
    ],
)
@pytest.mark.parametrize("path", [GPODDER, NEXTCLOUD])
def test_a_cross_site_text_plain_post_with_valid_basic_changes_nothing(
    alice: Any, browser: dict[str, Any], path: str
) -> None:
    response = APIClient().post(
        path, CHANGE, content_type="text/plain", HTTP_AUTHORIZATION=basic(), **browser
    )

    body = assert_error(response, 403)
    assert "another site" in body["message"]
    assert "WWW-Authenticate" not in response
    assert "sessionid" not in response.cookies
    assert not Subscription.objects.exists()
    assert not Device.objects.exists()


def test_a_cross_site_request_is_refused_before_its_credentials_count(alice: Any) -> None:
    """Not a login attempt: another site cannot lock the person out with wrong passwords."""
    for _ in range(20):
        response = APIClient().get(
            "/api/2/devices/alice.json", HTTP_AUTHORIZATION=basic("wrong"), **CROSS_SITE_FORM
        )
        assert_error(response, 403)
    assert (
        APIClient().get("/api/2/devices/alice.json", HTTP_AUTHORIZATION=basic()).status_code == 200
    )


def test_a_cross_site_link_to_a_read_is_refused_too(alice: Any) -> None:
    client = APIClient()
    assert (
        client.post("/api/2/auth/alice/login.json", HTTP_AUTHORIZATION=basic()).status_code == 200
    )
    link: dict[str, Any] = {**CROSS_SITE_FORM, "HTTP_SEC_FETCH_USER": "?1"}
    assert_error(client.get(GPODDER + "?since=0", **link), 403)


@pytest.mark.parametrize(
    "browser",
    [
        {"HTTP_SEC_FETCH_SITE": "same-origin", "HTTP_SEC_FETCH_MODE": "cors"},
        {"HTTP_SEC_FETCH_SITE": "none", "HTTP_SEC_FETCH_MODE": "navigate"},
        {"HTTP_ORIGIN": "http://testserver"},
    ],
)
def test_a_browsers_request_of_this_site_with_credentials_is_served(
    alice: Any, browser: dict[str, Any]
) -> None:
    response = APIClient().get(GPODDER + "?since=0", HTTP_AUTHORIZATION=basic(), **browser)
    assert response.status_code == 200, response.content


@pytest.mark.parametrize("app", APPS)
@pytest.mark.parametrize(
    "content_type", ["application/json", "application/x-www-form-urlencoded", "text/plain"]
)
@pytest.mark.parametrize("path", [GPODDER, NEXTCLOUD])
def test_apps_post_json_under_any_label_as_before(
    alice: Any, app: dict[str, Any], content_type: str, path: str
) -> None:
    response = APIClient().post(
        path, CHANGE, content_type=content_type, HTTP_AUTHORIZATION=basic(), **app
    )
    assert response.status_code == 200, response.content
    assert Subscription.objects.filter(user=alice).count() == 1


@pytest.mark.parametrize(
    "odd",
    [
        {"HTTP_SEC_FETCH_SITE": "x" * 5000},
        {"HTTP_SEC_FETCH_SITE": ""},
        {"HTTP_ORIGIN": ""},
        {"HTTP_ORIGIN": "https://testserver:99999999"},
        {"HTTP_ORIGIN": "http://testserver", "HTTP_HOST": "not allowed.example"},
        {"HTTP_ACCEPT": ";;,,;q=x"},
    ],
)
@pytest.mark.parametrize("path", [GPODDER, NEXTCLOUD])
def test_odd_browser_headers_are_no_500(alice: Any, odd: dict[str, Any], path: str) -> None:
    response = APIClient().post(
        path, CHANGE, content_type="text/plain", HTTP_AUTHORIZATION=basic(), **odd
    )
    if response.status_code != 200:
        assert_error(response, response.status_code)
        assert response.status_code in (400, 403)
