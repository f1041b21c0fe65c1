"""gpodder apps with an app password (docs/gpodder-api.md, "Authentication"): Basic accepts it,
the session cookie it sets remembers it, and revoking it ends both at once (mygpoclient, the
library inside gPodder, syncs with one: test_mygpoclient.py)."""

from typing import Any

from django.test import Client
from rest_framework.test import APIClient

from accounts import services
from accounts.basic import credentials
from tests.helpers import PASSWORD, assert_error, basic

DEVICES = "/api/2/devices/alice.json"


def test_basic_with_an_app_password_sets_a_cookie_that_ends_with_it(alice: Any) -> None:
    made, secret = services.app_password_create(user=alice, name="gPodder")
    app = APIClient()
    answer = app.get(DEVICES, HTTP_AUTHORIZATION=basic("alice", secret))
    assert answer.status_code == 200
    assert "sessionid" in answer.cookies
    assert app.get(DEVICES).status_code == 200  # the cookie alone

    services.app_password_revoke(user=alice, app_password_id=made.pk)

    refused = app.get(DEVICES)
    assert_error(refused, 401)
    assert refused["WWW-Authenticate"].startswith("Basic")
    assert_error(app.get(DEVICES), 401)  # the session was ended, not just refused once
    assert_error(APIClient().get(DEVICES, HTTP_AUTHORIZATION=basic("alice", secret)), 401)
    # The account's password, and its sessions, are not touched.
    assert APIClient().get(DEVICES, HTTP_AUTHORIZATION=basic("alice")).status_code == 200


def test_a_remembered_app_password_is_forgotten_once_revoked(alice: Any) -> None:
    """Kasts sends Basic on every request: the credentials are remembered, and a revoke must
    reach them too."""
    made, secret = services.app_password_create(user=alice, name="Kasts")
    app = APIClient()
    app.credentials(HTTP_AUTHORIZATION=basic("alice", secret))
    for _ in range(3):
        app.cookies.clear()
        assert app.get(DEVICES).status_code == 200
    assert len(credentials._cache()) == 1
    services.app_password_revoke(user=alice, app_password_id=made.pk)
    app.cookies.clear()
    assert_error(app.get(DEVICES), 401)


def test_a_session_made_by_an_app_password_does_not_open_the_pages(alice: Any) -> None:
    _, secret = services.app_password_create(user=alice, name="app")
    browser = Client()
    assert (
        browser.get(DEVICES, headers={"authorization": basic("alice", secret)}).status_code == 200
    )
    assert browser.get("/podcasts/")["Location"] == "/login/?next=/podcasts/"
    assert browser.get("/account/").status_code == 302


def test_the_same_cookie_switches_to_the_app_password_the_app_now_sends(alice: Any) -> None:
    made, secret = services.app_password_create(user=alice, name="app")
    app = APIClient()
    assert app.get(DEVICES, HTTP_AUTHORIZATION=basic("alice")).status_code == 200
    assert app.get(DEVICES, HTTP_AUTHORIZATION=basic("alice", secret)).status_code == 200
    services.app_password_revoke(user=alice, app_password_id=made.pk)
    assert_error(app.get(DEVICES), 401)


def test_a_wrong_app_password_is_a_401_with_the_realm(alice: Any) -> None:
    services.app_password_create(user=alice, name="app")
    answer = APIClient().get(
        DEVICES, HTTP_AUTHORIZATION=basic("alice", "abcd-efgh-jkmn-pqrs-tuvw-xyz2")
    )
    assert_error(answer, 401)
    assert answer["WWW-Authenticate"] == 'Basic realm="opa-subscriptions"'


def test_signing_in_on_the_pages_over_an_app_passwords_session_opens_them(alice: Any) -> None:
    _, secret = services.app_password_create(user=alice, name="app")
    browser = Client()
    browser.get(DEVICES, headers={"authorization": basic("alice", secret)})
    signed_in = browser.post("/login/", {"username": "alice", "password": PASSWORD})
    assert signed_in["Location"] == "/podcasts/"
    assert browser.get("/podcasts/").status_code == 200
