"""Deleting a whole account (docs/web.md, "Deleting an account"): signed out at once, deleted by
the worker in one transaction with everything of it and nothing of anyone else's, redelivered
messages doing nothing, a failure undoing it all and opening the account again."""

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db.models.signals import pre_delete
from django.test import Client
from rest_framework.test import APIClient
from rest_framework_simplejwt.token_blacklist.models import OutstandingToken

from accounts import services as accounts
from accounts.models import AppPassword
from core import clock
from deletions import services
from deletions.models import AccountDeletion, Deletion
from deletions.tasks import process_account_deletion
from episodes.actions import actions_parsed
from episodes.models import EpisodeAction
from episodes.services import actions_upload
from gpodder.models import Device, DeviceFeed
from gpodder.services import device_touch, subscription_upload
from subscriptions.models import Subscription, SubscriptionFeed, SubscriptionGuid
from tests.factories import UserFactory
from tests.helpers import subscribe

PASSWORD = "a long and unusual passphrase 3"
MODELS = [
    Subscription,
    SubscriptionGuid,
    SubscriptionFeed,
    Device,
    DeviceFeed,
    EpisodeAction,
    Deletion,
    AppPassword,
    OutstandingToken,
]


def populate(user: Any, feeds: int = 3, actions: int = 5) -> None:
    """Some of everything an account can have."""
    for n in range(feeds):
        subscribe(user, f"https://feeds.example/{n}.xml")
    phone = device_touch(user=user, device_id="phone")
    subscription_upload(user=user, device=phone, add=["HTTPS://Feeds.example/0.xml"], remove=[])
    actions_upload(
        user=user,
        actions=actions_parsed(
            [
                {"podcast": f"https://feeds.example/{n % feeds}.xml",
                 "episode": f"https://e.example/{n}.mp3", "action": "download", "device": "phone"}
                for n in range(actions)
            ],
            limit=10_000,
        ),
    )  # fmt: skip
    sub = Subscription.objects.filter(user=user).first()
    assert sub is not None
    Deletion.objects.create(
        user=user, subscription=sub, guid=sub.guid, status="FAILURE", requested=clock.now()
    )
    accounts.app_password_create(user=user, name="app")
    accounts.token_login(username=user.get_username(), password=PASSWORD)


def rows(user_id: int | None = None) -> dict[str, int]:
    found = {}
    for model in MODELS:
        field = "device__user_id" if model is DeviceFeed else "user_id"
        manager: Any = model._default_manager
        query = manager.all() if user_id is None else manager.filter(**{field: user_id})
        found[model.__name__] = query.count()
    return found


@pytest.fixture
def alice(db: None) -> Any:
    return UserFactory(username="alice", with_password=PASSWORD)


@pytest.fixture
def requested(alice: Any, django_capture_on_commit_callbacks: Any) -> AccountDeletion:
    """Alice's account deletion, asked for, its task not yet run."""
    with django_capture_on_commit_callbacks(execute=False):
        return services.account_deletion_request(user=alice)


def test_asking_signs_the_account_out_everywhere_at_once(alice: Any) -> None:
    tokens = accounts.token_login(username="alice", password=PASSWORD)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {tokens.access_token}")
    assert api.get("/v1/subscriptions").status_code == 200  # now remembered as active
    browser = Client()
    browser.force_login(alice)
    basic = APIClient()
    basic.login(username="alice", password=PASSWORD)

    services.account_deletion_request(user=alice)  # no commit here: the task waits

    alice.refresh_from_db()
    assert alice.is_active is False
    assert api.get("/v1/subscriptions").status_code == 401
    assert browser.get("/podcasts/").status_code == 302
    refreshed = APIClient().post(
        "/v1/auth/refresh", {"refresh_token": tokens.refresh_token}, format="json"
    )
    assert refreshed.status_code == 401
    assert (
        APIClient()
        .post("/v1/auth/login", {"username": "alice", "password": PASSWORD}, format="json")
        .status_code
        == 401
    )


def test_asking_twice_gives_the_pending_one(alice: Any, requested: AccountDeletion) -> None:
    assert services.account_deletion_request(user=alice).pk == requested.pk
    assert AccountDeletion.objects.count() == 1
    assert requested.status == AccountDeletion.Status.PENDING
    assert requested.username == "alice"


def test_the_worker_deletes_everything_of_the_account_and_nothing_else(
    alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    bob: Any = UserFactory(username="bob", with_password=PASSWORD)
    populate(alice)
    populate(bob)
    before = rows(bob.pk)
    assert all(rows(alice.pk).values()), rows(alice.pk)
    with django_capture_on_commit_callbacks(execute=False):
        requested = services.account_deletion_request(user=alice)

    assert process_account_deletion.apply(args=(requested.pk,)).get() == "SUCCESS"

    assert not get_user_model().objects.filter(pk=alice.pk).exists()
    assert rows(alice.pk) == dict.fromkeys(before, 0)
    assert rows(bob.pk) == before
    requested.refresh_from_db()
    assert requested.status == AccountDeletion.Status.SUCCESS
    assert requested.user_id is None
    assert requested.username == "alice"
    assert requested.message == services.ACCOUNT_DELETED
    # Redelivered: nothing more happens.
    assert process_account_deletion.apply(args=(requested.pk,)).get() == "skipped"


def test_a_failure_undoes_everything_and_opens_the_account_again(
    alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    populate(alice)
    before = rows(alice.pk)
    with django_capture_on_commit_callbacks(execute=False):
        requested = services.account_deletion_request(user=alice)

    def broken(**kwargs: Any) -> None:
        raise RuntimeError("the disk is on fire")

    pre_delete.connect(broken, sender=EpisodeAction, dispatch_uid="test-broken")
    try:
        result = process_account_deletion.apply(args=(requested.pk,))
    finally:
        pre_delete.disconnect(dispatch_uid="test-broken", sender=EpisodeAction)

    assert result.failed()
    assert rows(alice.pk) == before
    requested.refresh_from_db()
    assert requested.status == AccountDeletion.Status.FAILURE
    assert "active again" in requested.message
    alice.refresh_from_db()
    assert alice.is_active is True
    # And the person can ask again.
    assert services.account_deletion_request(user=alice).pk != requested.pk


def test_the_sweep_sends_a_lost_one_again_and_fails_one_sent_too_often(
    alice: Any, requested: AccountDeletion, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    AccountDeletion.objects.filter(pk=requested.pk).update(
        last_sent=clock.now() - timedelta(hours=1)
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert services.deletion_sweep() == {"resent": 1, "failed": 0}
    requested.refresh_from_db()
    assert requested.status == AccountDeletion.Status.SUCCESS
    assert requested.sends == 2

    carol: Any = UserFactory(username="carol")
    with django_capture_on_commit_callbacks(execute=False):
        stuck = services.account_deletion_request(user=carol)
    AccountDeletion.objects.filter(pk=stuck.pk).update(
        sends=settings.DELETION_MAX_SENDS, last_sent=None
    )
    assert services.deletion_sweep() == {"resent": 0, "failed": 1}
    stuck.refresh_from_db()
    assert stuck.status == AccountDeletion.Status.FAILURE
    carol.refresh_from_db()
    assert carol.is_active is True


def test_a_broker_away_leaves_it_unsent_for_the_sweep(
    alice: Any, django_capture_on_commit_callbacks: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def away(*args: Any, **kwargs: Any) -> None:
        raise ConnectionError("no broker")

    monkeypatch.setattr(process_account_deletion, "delay", away)
    with django_capture_on_commit_callbacks(execute=True):
        requested = services.account_deletion_request(user=alice)
    requested.refresh_from_db()
    assert requested.last_sent is None
    assert requested.status == AccountDeletion.Status.PENDING


def test_a_big_account_is_deleted_in_a_bounded_number_of_queries(
    alice: Any, django_capture_on_commit_callbacks: Any, django_assert_max_num_queries: Any
) -> None:
    from subscriptions.services import AddEntry, subscription_add_many

    subscription_add_many(
        user=alice, entries=[AddEntry(feed_url=f"https://f.example/{n}") for n in range(300)]
    )
    actions_upload(
        user=alice,
        actions=actions_parsed(
            [{"podcast": f"https://f.example/{n % 300}", "episode": f"https://e/{n}",
              "action": "new", "device": f"d{n % 5}"} for n in range(2000)],
            limit=5000,
        ),
    )  # fmt: skip
    # Asked for once everything is written: the account is inactive from then on.
    with django_capture_on_commit_callbacks(execute=False):
        requested = services.account_deletion_request(user=alice)
    # Bounded by the tables that hold an account's rows, not by the rows: the mail, the confirmed
    # address, the invitations made and used, a registration's wait and the activity are six;
    # the second factors' tables (passkeys, apps, recovery codes and their codes) four more.
    with django_assert_max_num_queries(50):
        assert services.account_deletion_process(deletion_id=requested.pk) == "SUCCESS"
    assert not EpisodeAction.objects.exists()
    assert not Subscription.objects.exists()
