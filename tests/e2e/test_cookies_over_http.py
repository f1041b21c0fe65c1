"""Cookies over plain HTTP, under gunicorn with the production settings (docs/operations.md,
"Cookies over plain HTTP"): a deployment on a LAN (SECURE_SSL_REDIRECT=false) answers its
cookies without `Secure`, so clients that keep cookies the standard way send them back over
`http://`: mygpoclient, an AntennaPod-shaped client, the pages' sign-in. Over HTTPS, here
through the proxy header the settings trust (`X-Forwarded-Proto: https`), they stay `Secure`.

The service runs with config.settings.base, only its STATIC_ROOT moved out of the working tree.
The clients keep cookies themselves (urllib's and requests' cookie jars), which drop a cookie
marked `Secure` on an `http://` URL, as every client does.
"""

import os
from base64 import b64encode
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from django.db import connection
from mygpoclient import api

from tests.e2e.conftest import pages_settings
from tests.factories import UserFactory
from tests.servers import gunicorn_service

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("transactional_db")]

PASSWORD = "a long and unusual passphrase for plain http"
TIMEOUT = 30


def production_env(settings_dir: Path) -> dict[str, str]:
    env = {
        **os.environ,
        **pages_settings(settings_dir),
        "SECRET_KEY": "cookies-test-secret-key-long-enough-for-hs256-signing-0123",
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "false",
        "WEB_CONCURRENCY": "2",
        "LOG_LEVEL": "WARNING",
    }
    env.pop("REDIS_URL", None)
    env.pop("DEBUG", None)
    return env


@pytest.fixture
def service(tmp_path: Path, static_settings: Path) -> Iterator[str]:
    """The service under gunicorn with the production settings, over plain HTTP: its base URL."""
    db = connection.settings_dict
    env = {
        **production_env(static_settings),
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
    }
    with gunicorn_service(env, tmp_path / "gunicorn.log") as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture
def alice(transactional_db: None) -> Any:
    return UserFactory(username="alice", with_deployed_password=PASSWORD)


def basic() -> str:
    return "Basic " + b64encode(f"alice:{PASSWORD}".encode()).decode()


def set_cookie(response: requests.Response, name: str) -> str:
    """The Set-Cookie header of the answer that sets `name`."""
    headers = response.raw.headers.getlist("Set-Cookie")
    found = [header for header in headers if header.startswith(f"{name}=")]
    assert found, headers
    return str(found[0])


def is_secure(header: str) -> bool:
    return "secure" in [part.strip().lower() for part in header.split(";")]


def test_mygpoclient_syncs_over_plain_http_on_its_cookie(service, alice):
    """mygpoclient 1.10, unmodified: it gives credentials at most 3 times per client object, then
    relies on its cookie jar, which keeps no `Secure` cookie for an http:// URL."""
    client = api.MygPodderClient("alice", PASSWORD, root_url=service)
    assert client.update_device_settings("laptop", caption="My laptop", type="laptop") is True
    result = client.update_subscriptions("laptop", add_urls=["https://podnews.net/rss"])
    assert client.pull_subscriptions("phone", since=0).add == ["https://podnews.net/rss"]
    assert client.update_device_settings("phone", type="mobile") is True
    assert {d.device_id for d in client.get_devices()} == {"laptop", "phone"}
    client.update_subscriptions("phone", remove_urls=["https://podnews.net/rss"])
    assert client.pull_subscriptions("laptop", since=result.since).remove == [
        "https://podnews.net/rss"
    ]
    assert client.put_subscriptions("n900", ["https://example.com/a.xml"]) is True
    assert client.get_subscriptions("n900") == ["https://example.com/a.xml"]
    # The jar holds the session cookie, as the server set it: without Secure.
    jar = {cookie.name: cookie.secure for cookie in client._client._cookie_jar}
    assert jar["sessionid"] is False


def test_an_antennapod_shaped_client_logs_in_once_then_rides_on_its_cookie(service, alice):
    http = requests.Session()  # a cookie jar, as OkHttp's
    login = http.post(
        f"{service}/api/2/auth/alice/login.json",
        data=b"",
        headers={"Authorization": basic(), "Content-Type": "plain/text; charset=utf-8"},
        timeout=TIMEOUT,
    )
    assert login.status_code == 200, login.text
    assert not is_secure(set_cookie(login, "sessionid"))
    # Then only the cookie: a device, an upload, pulls, the episode actions.
    device = http.post(
        f"{service}/api/2/devices/alice/phone.json",
        json={"caption": "AntennaPod", "type": "mobile"},
        timeout=TIMEOUT,
    )
    assert device.status_code == 200, device.text
    subs = f"{service}/api/2/subscriptions/alice/phone.json"
    upload = http.post(subs, json={"add": ["https://podnews.net/rss"]}, timeout=TIMEOUT)
    assert upload.status_code == 200, upload.text
    pulled = http.get(subs, params={"since": 0}, timeout=TIMEOUT)
    assert pulled.status_code == 200, pulled.text
    assert pulled.json()["add"] == ["https://podnews.net/rss"]
    episodes = f"{service}/api/2/episodes/alice.json"
    downloaded = http.get(episodes, params={"since": 0}, timeout=TIMEOUT)
    assert downloaded.status_code == 200, downloaded.text
    # The episode actions' read-up-to cookie comes back too (gpodder-api.md).
    assert "episodes_read_up_to" in http.cookies
    assert not is_secure(set_cookie(downloaded, "episodes_read_up_to"))
    sent = http.post(episodes, json=[], timeout=TIMEOUT)
    assert sent.status_code == 200, sent.text
    assert sent.json()["timestamp"] <= downloaded.json()["timestamp"]
    assert "Authorization" not in http.headers


def test_the_pages_sign_in_over_plain_http(service, alice):
    browser = requests.Session()
    page = browser.get(f"{service}/login/", timeout=TIMEOUT)
    assert page.status_code == 200
    assert not is_secure(set_cookie(page, "csrftoken"))
    token = browser.cookies["csrftoken"]
    signed_in = browser.post(
        f"{service}/login/",
        data={"csrfmiddlewaretoken": token, "username": "alice", "password": PASSWORD},
        allow_redirects=False,
        timeout=TIMEOUT,
    )
    assert signed_in.status_code == 302, signed_in.text[:500]
    assert signed_in.headers["Location"] == "/podcasts/"
    assert not is_secure(set_cookie(signed_in, "sessionid"))
    podcasts = browser.get(f"{service}/podcasts/", allow_redirects=False, timeout=TIMEOUT)
    assert podcasts.status_code == 200


def test_cookies_are_secure_over_https_through_the_proxy_header_and_only_then(service, alice):
    """The same requests, once as the proxy passes an HTTPS request on, once over plain HTTP."""
    for https, secure in (({"X-Forwarded-Proto": "https"}, True), ({}, False)):
        login = requests.post(
            f"{service}/api/2/auth/alice/login.json",
            headers={**https, "Authorization": basic()},
            timeout=TIMEOUT,
        )
        assert login.status_code == 200, login.text
        assert is_secure(set_cookie(login, "sessionid")) is secure
        page = requests.get(f"{service}/login/", headers=https, timeout=TIMEOUT)
        assert page.status_code == 200
        assert is_secure(set_cookie(page, "csrftoken")) is secure
        # HSTS keeps its own setting: sent over HTTPS only, as ever.
        assert ("Strict-Transport-Security" in page.headers) is secure
