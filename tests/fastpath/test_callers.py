"""Who the fast path answers: an app's session, remembered here and standing, checked in the
database on every request, so that a sign-out, a new password, a deactivation or a revoked app
password counts at once in every process; everything else is the view's."""

import base64
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from accounts import services
from accounts.throttles import LoginThrottle
from api.throttles import UserThrottle
from fastpath import middleware
from tests.factories import UserFactory
from tests.helpers import PASSWORD, subscribe

PULL = "/api/2/subscriptions/alice/phone.json?since=0"


def basic(password: str = PASSWORD) -> str:
    return "Basic " + base64.b64encode(f"alice:{password}".encode()).decode()


def app_session(password: str = PASSWORD) -> Client:
    """AntennaPod's way: Basic on login.json, then its cookie alone."""
    client = Client()
    answer = client.post(
        "/api/2/auth/alice/login.json",
        b"",
        content_type="plain/text",
        HTTP_AUTHORIZATION=basic(password),
    )
    assert answer.status_code == 200
    return client


def fast(client: Client, **headers: Any) -> tuple[int, bool]:
    """A pull's status, and whether the fast path answered it."""
    before = middleware.answered.total()
    status = client.get(PULL, **headers).status_code
    return status, middleware.answered.total() > before


@pytest.fixture(autouse=True)
def _fast_path_on(settings: Any) -> None:
    """Whatever FAST_PATH the run has (make test's pooled slice turns it off)."""
    settings.FAST_PATH = True


@pytest.fixture
def alice(db: None) -> Any:
    return UserFactory(username="alice", with_password=PASSWORD)


def test_an_apps_session_is_answered_by_the_fast_path_and_only_when_on(
    alice: Any, settings: Any
) -> None:
    client = app_session()
    assert fast(client) == (200, True)
    settings.FAST_PATH = False
    assert fast(client) == (200, False)


def _sign_out(alice: Any, client: Client) -> None:
    assert client.post("/api/2/auth/alice/logout.json").status_code == 200


def _new_password(alice: Any, client: Client) -> None:
    alice.set_password("another long passphrase")
    alice.save()


def _turned_off(alice: Any, client: Client) -> None:
    alice.is_active = False
    alice.save()


# As another process makes them: in the database only, with no word to this one.
def _session_gone_elsewhere(alice: Any, client: Client) -> None:
    Session.objects.all().delete()


def _password_elsewhere(alice: Any, client: Client) -> None:
    get_user_model().objects.filter(pk=alice.pk).update(password="argon2$elsewhere")


def _turned_off_elsewhere(alice: Any, client: Client) -> None:
    get_user_model().objects.filter(pk=alice.pk).update(is_active=False)


@pytest.mark.parametrize(
    "change",
    [
        _sign_out,
        _new_password,
        _turned_off,
        _session_gone_elsewhere,
        _password_elsewhere,
        _turned_off_elsewhere,
    ],
)
def test_a_change_of_the_account_counts_at_once(
    alice: Any, change: Callable[[Any, Client], None]
) -> None:
    client = app_session()
    assert fast(client) == (200, True)
    change(alice, client)
    assert fast(client) == (401, False)


def test_a_revoked_app_password_ends_its_session_at_once(alice: Any) -> None:
    made, secret = services.app_password_create(user=alice, name="AntennaPod")
    client = app_session(secret)
    assert fast(client) == (200, True)
    services.app_password_revoke(user=alice, app_password_id=made.pk)
    assert fast(client) == (401, False)
    assert not Session.objects.exists()  # the view ended it


def test_basic_alone_is_the_views_which_makes_the_session(alice: Any) -> None:
    client = Client()
    assert fast(client, HTTP_AUTHORIZATION=basic()) == (200, False)
    assert fast(client, HTTP_AUTHORIZATION=basic()) == (200, True)  # with its cookie now


def test_wrong_or_other_basic_beside_a_session_is_the_views(alice: Any) -> None:
    UserFactory(username="bob", with_password=PASSWORD)
    client = app_session()
    assert fast(client, HTTP_AUTHORIZATION=basic("wrong")) == (401, False)
    bob = "Basic " + base64.b64encode(f"bob:{PASSWORD}".encode()).decode()
    # Bob's credentials on alice's cookie: the view signs bob in, and bob's path is not alice's.
    assert fast(client, HTTP_AUTHORIZATION=bob) == (401, False)
    assert fast(client, HTTP_AUTHORIZATION="Basic !!!") == (401, False)


def test_a_locked_out_username_is_refused_with_its_right_password(
    alice: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(LoginThrottle, "THROTTLE_RATES", {"user": "1000/min", "login": "3/min"})
    client = app_session()
    assert fast(client, HTTP_AUTHORIZATION=basic()) == (200, True)
    for _ in range(3):
        assert Client().get(PULL, HTTP_AUTHORIZATION=basic("wrong")).status_code == 401
    assert fast(client, HTTP_AUTHORIZATION=basic()) == (429, False)


def test_the_user_throttle_counts_fast_answers_and_the_view_refuses(
    alice: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(UserThrottle, "THROTTLE_RATES", {"user": "3/min", "login": "10/min"})
    client = app_session()  # login.json: the first of three
    assert fast(client) == (200, True)
    assert fast(client) == (200, True)
    status, taken = fast(client)
    assert (status, taken) == (429, False)
    assert "3/min requests per user" in client.get(PULL).json()["message"]


def test_a_session_made_on_the_pages_is_nobody_here(alice: Any) -> None:
    client = Client()
    answer = client.post("/login/", {"username": "alice", "password": PASSWORD})
    assert answer.status_code == 302
    assert fast(client) == (401, False)


NEXTCLOUD = "/index.php/apps/gpoddersync/episode_action?since=0"


def test_nextcloud_basic_is_answered_once_verified_and_never_after_a_revocation(
    alice: Any,
) -> None:
    made, secret = services.app_password_create(user=alice, name="AntennaPod")
    client = Client(HTTP_AUTHORIZATION=basic(secret))

    def nextcloud() -> tuple[int, bool]:
        before = middleware.answered.total()
        status = client.get(NEXTCLOUD).status_code
        return status, middleware.answered.total() > before

    assert nextcloud() == (200, False)  # the view checks the password
    assert nextcloud() == (200, True)
    services.app_password_revoke(user=alice, app_password_id=made.pk)
    assert nextcloud() == (401, False)


def test_a_fast_answer_takes_no_more_queries_than_the_views(
    alice: Any, settings: Any, django_assert_max_num_queries: Any
) -> None:
    """The session lookup, the pull's statement, the device's mark and its sync note: the
    same statements as the view's, in the same number."""
    client = app_session()
    client.get(PULL)  # the device made
    settings.FAST_PATH = False
    with CaptureQueriesContext(connection) as by_view:
        assert client.get(PULL).status_code == 200
    settings.FAST_PATH = True
    with django_assert_max_num_queries(len(by_view)):
        assert fast(client) == (200, True)


def test_a_request_passed_on_is_counted_once_by_the_user_throttle(
    alice: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(UserThrottle, "THROTTLE_RATES", {"user": "4/min", "login": "10/min"})
    client = app_session()  # the first of four
    before = middleware.answered.total()
    # A filter the fast path leaves to the view before it reads anything, and a bad since it
    # leaves to the view once it has counted the request.
    assert client.get("/api/2/episodes/alice.json?aggregated=true").status_code == 200
    assert client.get("/api/2/subscriptions/alice/phone.json?since=x").status_code == 400
    assert middleware.answered.total() == before
    assert fast(client) == (200, True)  # the fourth
    assert fast(client) == (429, False)


@pytest.mark.parametrize("on", [False, True])
def test_a_refused_request_is_counted_once_and_refused_as_the_view_refuses_it(
    alice: Any, settings: Any, monkeypatch: pytest.MonkeyPatch, on: bool
) -> None:
    """The fast path's count refuses it, and its view answers that refusal without a second
    count: the window holds one more than the rate, as with the fast path off."""
    monkeypatch.setattr(UserThrottle, "THROTTLE_RATES", {"user": "3/min", "login": "10/min"})
    settings.FAST_PATH = on
    client = app_session()  # the first of three
    assert client.get(PULL).status_code == 200
    assert client.get(PULL).status_code == 200
    refused = client.get(PULL)
    assert refused.status_code == 429
    assert refused.json()["message"].startswith("Rate limit exceeded: at most 3/min requests")
    assert 0 < int(refused["Retry-After"]) <= 60
    assert cache.get(f"throttle_user_{alice.pk}") == 4  # DRF's key for the user's window


def test_what_it_leaves_to_the_view_before_reading_costs_no_query_more(
    alice: Any, settings: Any
) -> None:
    client = app_session()
    filtered = "/api/2/episodes/alice.json?since=0&aggregated=true"
    client.get(filtered)
    settings.FAST_PATH = False
    with CaptureQueriesContext(connection) as off:
        client.get(filtered)
    settings.FAST_PATH = True
    with CaptureQueriesContext(connection) as on:
        client.get(filtered)
    assert len(on) == len(off)


class _Broken:
    """A body that stops arriving: what a WSGI server's input raises then."""

    def __init__(self, error: OSError) -> None:
        self.error = error

    def read(self, *args: Any) -> bytes:
        raise self.error

    readline = read


@pytest.mark.parametrize(
    ("error", "status"),
    [(ConnectionResetError(104, "Connection reset by peer"), 400), (TimeoutError(), 408)],
)
@pytest.mark.parametrize("on", [False, True])
def test_an_upload_whose_body_stops_arriving_is_the_clients_error(
    alice: Any, settings: Any, error: OSError, status: int, on: bool
) -> None:
    settings.FAST_PATH = on
    client = app_session()
    stopped: dict[str, Any] = {"wsgi.input": _Broken(error), "CONTENT_LENGTH": "100"}
    answer = client.post("/api/2/episodes/alice.json", content_type="application/json", **stopped)
    assert answer.status_code == status


# --- /v1/: a bearer token ----------------------------------------------------------------------


def _bearer(alice: Any, app_password_id: int | None = None) -> tuple[Client, str]:
    """alice's app with a token, and the path of GET one of her subscription."""
    sub = subscribe(alice, "https://feeds.example/one.xml")
    token = services.refresh_token_for(alice, app_password_id).access_token
    return Client(HTTP_AUTHORIZATION=f"Bearer {token}"), f"/v1/subscriptions/{sub.guid}"


def _one(client: Client, path: str) -> tuple[int, bool]:
    before = middleware.answered.total()
    status = client.get(path).status_code
    return status, middleware.answered.total() > before


@pytest.mark.parametrize("change", [_new_password, _turned_off])
def test_a_token_is_answered_once_verified_and_never_after_the_account_changed(
    alice: Any, change: Callable[[Any, Client], None]
) -> None:
    client, path = _bearer(alice)
    assert _one(client, path) == (200, False)  # the view verifies the token
    assert _one(client, path) == (200, True)
    change(alice, client)
    assert _one(client, path) == (401, False)


def test_an_app_passwords_token_is_always_the_views(alice: Any) -> None:
    """Its standing is read on every request: a revocation ends it at once everywhere."""
    made, _ = services.app_password_create(user=alice, name="Kasts")
    client, path = _bearer(alice, made.pk)
    assert _one(client, path) == (200, False)
    assert _one(client, path) == (200, False)
    services.app_password_revoke(user=alice, app_password_id=made.pk)
    assert _one(client, path) == (401, False)


def test_an_expired_token_is_the_views(alice: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    client, path = _bearer(alice)
    assert _one(client, path) == (200, False)
    assert _one(client, path) == (200, True)
    later = time.time() + 3 * 3600
    monkeypatch.setattr(time, "time", lambda: later)
    assert _one(client, path) == (401, False)


def test_another_persons_guid_is_the_views_404(alice: Any, bob: Any) -> None:
    client, path = _bearer(alice)
    theirs = subscribe(bob, "https://feeds.example/theirs.xml")
    assert _one(client, path) == (200, False)
    assert _one(client, f"/v1/subscriptions/{theirs.guid}") == (404, False)


def test_the_list_on_the_fast_path_is_the_callers_own(alice: Any, bob: Any) -> None:
    client, path = _bearer(alice)
    subscribe(bob, "https://feeds.example/theirs.xml")
    assert _one(client, path) == (200, False)  # the view verifies the token
    assert _one(client, "/v1/subscriptions") == (200, True)
    listed = client.get("/v1/subscriptions").json()
    assert [s["feed_url"] for s in listed["subscriptions"]] == ["https://feeds.example/one.xml"]
    assert listed["total"] == 1


@pytest.mark.parametrize("asked", ["one", "/v1/subscriptions", "/v1/subscriptions?per_page=1"])
def test_a_fast_v1_answer_takes_no_more_queries_than_the_views(
    alice: Any, settings: Any, django_assert_max_num_queries: Any, asked: str
) -> None:
    client, path = _bearer(alice)
    subscribe(alice, "https://feeds.example/two.xml")
    asked = path if asked == "one" else asked
    settings.FAST_PATH = False
    assert _one(client, asked) == (200, False)  # the view verifies the token
    with CaptureQueriesContext(connection) as by_view:
        assert _one(client, asked) == (200, False)
    views = len(by_view)  # read from the log, which the next request empties
    settings.FAST_PATH = True
    with django_assert_max_num_queries(views):
        assert _one(client, asked) == (200, True)
