"""A sync request authenticated just before its account was deleted or deactivated, and written
after that committed: a 401 with the error object on every surface, and nothing written
(docs/api.md, "Deleting an account"). Every writer's first lock refuses an account that is gone
or inactive.

The request is authenticated as usual; the account's deletion (the request and the worker's, as
the pages and the worker run them) or its deactivation then commits before the view goes on, with
the user object authentication returned: exactly what a request in flight sees."""

from collections.abc import Callable
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient
from rest_framework_simplejwt.token_blacklist.models import OutstandingToken

from accounts import services as accounts
from accounts.authentication import BearerAuthentication
from accounts.basic import BasicOnlyAuthentication, BasicThenSessionAuthentication
from deletions import services as deletions
from episodes.models import EpisodeAction
from gpodder import services as gpodder_services
from gpodder.models import Device, DeviceFeed
from gpodder.services import device_touch
from nextcloud import services as nextcloud_services
from nextcloud.models import ActionsRead
from subscriptions.models import Subscription
from tests.factories import UserFactory
from tests.helpers import PASSWORD, assert_error, basic, client_for, subscribe

pytestmark = pytest.mark.usefixtures("transactional_db")

NC = "/index.php/apps/gpoddersync"
FEED = "https://feeds.example/gone.xml"
ACTION = {"podcast": FEED, "episode": "https://e.example/1.mp3", "action": "download"}


def deleted(user: Any) -> None:
    """The account's deletion as the pages ask for it and the worker then runs it."""
    deletion = deletions.account_deletion_request(user=user)
    deletions.account_deletion_process(deletion_id=deletion.pk)
    assert not get_user_model().objects.filter(pk=user.pk).exists()


def deactivated(user: Any) -> None:
    staff = UserFactory(is_staff=True)
    assert accounts.user_deactivate(user_ids=[user.pk], acting_user=staff) == 1


@pytest.fixture(params=[deleted, deactivated], ids=["deleted", "deactivated"])
def gone(request: pytest.FixtureRequest) -> Callable[[Any], None]:
    return request.param


@pytest.fixture
def alice() -> Any:
    return UserFactory(username="alice", with_password=PASSWORD)


@pytest.fixture
def after_authentication(
    monkeypatch: pytest.MonkeyPatch, gone: Callable[[Any], None]
) -> Callable[[Any], None]:
    """Make the account go (and commit) once `scheme` has authenticated the request."""

    def patch(scheme: Any) -> None:
        authenticate = scheme.authenticate

        def authenticated_then_gone(self: Any, request: Any) -> Any:
            found = authenticate(self, request)
            if found is not None:
                gone(found[0])
            return found

        monkeypatch.setattr(scheme, "authenticate", authenticated_then_gone)

    return patch


def nothing_written(user_id: int) -> None:
    assert not Subscription.objects.filter(user_id=user_id).exists()
    assert not EpisodeAction.objects.filter(user_id=user_id).exists()
    assert not DeviceFeed.objects.filter(device__user_id=user_id).exists()


def refused(response: Any, scheme: str) -> None:
    assert_error(response, 401, "User not authorized")
    assert response["WWW-Authenticate"].startswith(scheme)


def basic_client(username: str = "alice") -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=basic(username))
    return client


# --- /v1/ ------------------------------------------------------------------------------------


def test_v1_add(alice: Any, after_authentication: Any) -> None:
    api = client_for(alice)
    after_authentication(BearerAuthentication)
    response = api.post("/v1/subscriptions", {"subscriptions": [{"feed_url": FEED}]}, format="json")
    refused(response, "Bearer")
    nothing_written(alice.pk)


# --- the gpodder API -------------------------------------------------------------------------


@pytest.mark.parametrize("device_known", [False, True], ids=["new-device", "known-device"])
def test_gpodder_subscription_upload(alice: Any, after_authentication: Any, device_known: bool):
    if device_known:
        device_touch(user=alice, device_id="phone")
    after_authentication(BasicThenSessionAuthentication)
    response = basic_client().post(
        "/api/2/subscriptions/alice/phone.json", {"add": [FEED], "remove": []}, format="json"
    )
    refused(response, "Basic")
    nothing_written(alice.pk)


@pytest.mark.parametrize("device_known", [False, True], ids=["new-device", "known-device"])
def test_gpodder_episode_action_upload(alice: Any, after_authentication: Any, device_known: bool):
    if device_known:
        device_touch(user=alice, device_id="phone")
    after_authentication(BasicThenSessionAuthentication)
    response = basic_client().post(
        "/api/2/episodes/alice.json", [{**ACTION, "device": "phone"}], format="json"
    )
    refused(response, "Basic")
    nothing_written(alice.pk)


def test_gpodder_episode_action_upload_without_a_device(alice: Any, after_authentication: Any):
    after_authentication(BasicThenSessionAuthentication)
    response = basic_client().post("/api/2/episodes/alice.json", [ACTION], format="json")
    refused(response, "Basic")
    nothing_written(alice.pk)


def test_gpodder_device_update(alice: Any, after_authentication: Any) -> None:
    after_authentication(BasicThenSessionAuthentication)
    response = basic_client().post(
        "/api/2/devices/alice/tablet.json", {"caption": "Tablet"}, format="json"
    )
    refused(response, "Basic")
    assert not Device.objects.filter(user_id=alice.pk).exists()


# --- the Nextcloud paths ---------------------------------------------------------------------


@pytest.mark.parametrize("device_known", [False, True], ids=["new-device", "known-device"])
def test_nextcloud_subscription_change(alice: Any, after_authentication: Any, device_known: bool):
    if device_known:
        device_touch(user=alice, device_id="nextcloud")
    after_authentication(BasicOnlyAuthentication)
    response = basic_client().post(
        f"{NC}/subscription_change/create", {"add": [FEED], "remove": []}, format="json"
    )
    refused(response, "Basic")
    nothing_written(alice.pk)


@pytest.mark.parametrize("device_known", [False, True], ids=["new-device", "known-device"])
def test_nextcloud_episode_action_create(alice: Any, after_authentication: Any, device_known):
    if device_known:
        device_touch(user=alice, device_id="nextcloud")
    after_authentication(BasicOnlyAuthentication)
    response = basic_client().post(f"{NC}/episode_action/create", [ACTION], format="json")
    refused(response, "Basic")
    nothing_written(alice.pk)
    assert not ActionsRead.objects.exists()


# --- what reads note: harmless, whatever the account's fate ---------------------------------


@pytest.fixture
def gone_after(monkeypatch: pytest.MonkeyPatch, gone: Callable[[Any], None], alice: Any):
    """Make the account go (and commit) once the read `name` of `module` has answered, before
    the request notes what it read."""

    def patch(module: Any, name: str) -> None:
        read = getattr(module, name)

        def read_then_gone(*args: Any, **kwargs: Any) -> Any:
            found = read(*args, **kwargs)
            gone(alice)
            return found

        monkeypatch.setattr(module, name, read_then_gone)

    return patch


@pytest.mark.parametrize(
    "path", ["/api/2/subscriptions/alice/phone.json?since=0", "/subscriptions/alice/phone.json"]
)
def test_gpodder_pull_remembers_no_spelling(alice: Any, gone_after: Any, path: str) -> None:
    subscribe(alice, FEED)  # on /v1/: the phone has no spelling of it yet
    device_touch(user=alice, device_id="phone")
    gone_after(gpodder_services, "subscription_feeds_reached")
    response = basic_client().get(path)
    assert response.status_code == 200, response.content
    assert FEED in response.content.decode()
    assert not DeviceFeed.objects.exists()


def test_nextcloud_download_remembers_no_read_position(alice: Any, gone_after: Any) -> None:
    device_touch(user=alice, device_id="nextcloud")
    gone_after(nextcloud_services, "read_point")
    response = basic_client().get(f"{NC}/episode_action?since=0")
    assert response.status_code == 200, response.content
    assert not ActionsRead.objects.exists()


def test_import_opml_refuses_a_deactivated_account(alice: Any, tmp_path: Any) -> None:
    deactivated(alice)
    document = tmp_path / "feeds.opml"
    document.write_text(
        f'<opml version="2.0"><body><outline type="rss" xmlUrl="{FEED}"/></body></opml>'
    )
    with pytest.raises(CommandError, match="'alice' is deactivated: activate it first"):
        call_command("import_opml", "alice", str(document), "--no-progress", stdout=StringIO())
    nothing_written(alice.pk)


# --- signing in on /v1/ ---------------------------------------------------------------------


def test_v1_login_whose_password_was_being_checked(alice: Any, gone_after: Any) -> None:
    gone_after(accounts, "app_authenticate")
    response = APIClient().post(
        "/v1/auth/login", {"username": "alice", "password": PASSWORD}, format="json"
    )
    refused(response, "Bearer")
    assert not OutstandingToken.objects.exists()


def test_v1_refresh_of_an_account_deleted_meanwhile(
    alice: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    refresh = str(accounts.refresh_token_for(alice))
    issue = accounts.refresh_token_for

    def deleted_then_issued(user: Any, *args: Any) -> Any:
        deleted(user)
        return issue(user, *args)

    monkeypatch.setattr(accounts, "refresh_token_for", deleted_then_issued)
    response = APIClient().post("/v1/auth/refresh", {"refresh_token": refresh}, format="json")
    refused(response, "Bearer")
    # simplejwt keeps the refreshed one, without its account; none was issued.
    assert list(OutstandingToken.objects.values_list("user_id", flat=True)) == [None]
