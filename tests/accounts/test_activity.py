"""An account's activity is its last sign-in anywhere or its last request an app's credentials
answered on any of the three APIs (accounts.activity), noted at most once an hour by each
process: what the inactivity policy and the admin's figures count."""

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from accounts import activity
from accounts.models import Activity
from accounts.services import app_password_create
from tests.factories import UserFactory
from tests.helpers import PASSWORD, Clock, basic, basic_app, client_for
from tests.web.helpers import PASSWORD as PAGES_PASSWORD

NEXTCLOUD = "/index.php/apps/gpoddersync/subscriptions"


def seen(user: Any) -> Any:
    return Activity.objects.filter(user_id=user.pk).values_list("seen", flat=True).first()


@pytest.fixture
def alice(db: None) -> Any:
    return UserFactory(username="alice", with_password=PASSWORD)


def test_a_gpodder_sync_is_activity(alice: Any, clock: Clock) -> None:
    answer = basic_app("alice").get("/api/2/subscriptions/alice/phone.json?since=0")

    assert answer.status_code == 200
    assert seen(alice) == clock.now


def test_a_nextcloud_sync_by_app_password_is_activity(alice: Any, clock: Clock) -> None:
    _, password = app_password_create(user=alice, name="AntennaPod")
    app = Client(HTTP_AUTHORIZATION=basic("alice", password))

    assert app.get(NEXTCLOUD).status_code == 200
    assert seen(alice) == clock.now


def test_an_open_podcast_api_request_is_activity(alice: Any, clock: Clock) -> None:
    """A /v1/ app that only reads, between two logins, is seen: the bearer token answers."""
    app = client_for(alice)
    assert seen(alice) is None

    assert app.get("/v1/subscriptions").status_code == 200
    assert seen(alice) == clock.now


def test_a_sign_in_on_the_pages_is_activity(db: None, clock: Clock) -> None:
    person: Any = UserFactory(username="zoë", with_password=PAGES_PASSWORD)
    answer = Client().post("/login/", {"username": "zoë", "password": PAGES_PASSWORD})

    assert answer.status_code == 302
    assert seen(person) == clock.now


def test_a_refused_request_is_no_activity(alice: Any) -> None:
    wrong = Client(HTTP_AUTHORIZATION=basic("alice", "not the password"))
    assert wrong.get("/api/2/subscriptions/alice/phone.json?since=0").status_code == 401
    assert wrong.get(NEXTCLOUD).status_code == 401
    # Signed in, but refused: another person's list.
    UserFactory(username="bob")
    assert basic_app("alice").get("/api/2/subscriptions/bob.json").status_code == 404
    assert Client().post("/login/", {"username": "alice", "password": "wrong"}).status_code == 200

    assert seen(alice) is None


def test_the_pages_note_no_activity(alice: Any, django_assert_max_num_queries) -> None:
    """A person on the pages is seen when they sign in: a page visited with their session reads
    or writes no activity (nor reads the user for it)."""
    client = Client()
    client.force_login(alice)
    Activity.objects.all().delete()
    activity.noted.clear()
    for path in ("/login/reset/", "/podcasts/"):
        with django_assert_max_num_queries(20) as done:
            assert client.get(path).status_code == 200
        assert not [q for q in done.captured_queries if "accounts_activity" in q["sql"]]
    assert seen(alice) is None


def test_noted_once_an_hour_by_each_process(alice: Any, clock: Clock) -> None:
    app = basic_app("alice")
    app.get("/api/2/subscriptions/alice/phone.json?since=0")
    first = clock.now

    clock.advance(minutes=40)
    app.get("/api/2/subscriptions/alice/phone.json?since=0")
    assert seen(alice) == first  # this process noted it within the hour

    activity.noted.clear()  # as another process, or this one an hour later
    app.get("/api/2/subscriptions/alice/phone.json?since=0")
    assert seen(alice) == clock.now


def test_a_second_request_within_the_hour_writes_nothing(
    alice: Any, django_assert_num_queries
) -> None:
    app = client_for(alice)
    app.get("/v1/subscriptions")
    with django_assert_num_queries(1):  # the list's count: no user, no activity
        assert app.get("/v1/subscriptions").status_code == 200


@pytest.mark.parametrize("fast_path", [True, False])
def test_an_answer_of_the_fast_path_is_activity(
    alice: Any, clock: Clock, settings: Any, fast_path: bool
) -> None:
    settings.FAST_PATH = fast_path
    app = basic_app("alice")
    app.get("/api/2/subscriptions/alice/phone.json?since=0")  # the session made: the view's
    activity.noted.clear()
    clock.advance(hours=2)

    assert app.get("/api/2/subscriptions/alice/phone.json?since=0").status_code == 200
    assert seen(alice) == clock.now


@pytest.mark.django_db(transaction=True)
def test_an_account_deleted_meanwhile_is_noted_nowhere_and_raises_nothing() -> None:
    gone: Any = UserFactory()
    user_id = gone.pk
    get_user_model().objects.filter(pk=user_id).delete()

    activity.activity_seen(user_id)

    assert not Activity.objects.filter(user_id=user_id).exists()
    activity.activity_seen(user_id)  # not kept as noted: tried again next time


def test_the_admins_figures_count_an_app_that_only_syncs(alice: Any, clock: Clock) -> None:
    """gpodder.net's lesson: an account whose person never opens the pages, and whose app syncs
    every day, is active."""
    from staff.selectors import accounts_active

    bob: Any = UserFactory(username="bob", last_login=clock.now - timedelta(days=400))
    for _ in range(3):
        activity.noted.clear()
        clock.advance(days=1)
        basic_app("alice").get("/api/2/subscriptions/alice/phone.json?since=0")

    assert accounts_active(now=clock.now) == {7: 1, 30: 1}
    assert seen(bob) is None
