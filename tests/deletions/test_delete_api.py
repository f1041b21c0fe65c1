"""DELETE /v1/subscriptions/{guid} in the embedded mode: the task runs in-process after commit."""

import time

import pytest

from deletions.models import Deletion
from deletions.services import RECEIVED, RESUBSCRIBED, SUCCEEDED
from subscriptions.models import Subscription
from tests.helpers import subscribe

FEED = "https://example.com/feed.xml"


@pytest.fixture
def sub(user):
    return subscribe(user, FEED)


def delete(api, guid, capture, execute=False):
    with capture(execute=execute) as callbacks:
        response = api.delete(f"/v1/subscriptions/{guid}")
    return response, callbacks


def test_delete_answers_202_and_stores_a_pending_deletion(
    api, sub, django_capture_on_commit_callbacks
):
    response, callbacks = delete(api, sub.guid, django_capture_on_commit_callbacks)

    assert response.status_code == 202
    body = response.json()
    assert body == {"deletion_id": body["deletion_id"], "message": RECEIVED}
    assert isinstance(body["deletion_id"], int)
    deletion = Deletion.objects.get(pk=body["deletion_id"])
    assert deletion.status == Deletion.Status.PENDING
    assert len(callbacks) == 1  # the task is sent once, after commit
    status = api.get(f"/v1/deletions/{body['deletion_id']}").json()
    assert status["status"] == "PENDING"


def test_delete_runs_to_success_and_the_subscription_answers_410(
    api, sub, django_capture_on_commit_callbacks
):
    sub_guid = str(sub.guid)
    response, _ = delete(api, sub_guid, django_capture_on_commit_callbacks, execute=True)
    deletion_id = response.json()["deletion_id"]

    assert api.get(f"/v1/deletions/{deletion_id}").json() == {
        "deletion_id": deletion_id,
        "status": "SUCCESS",
        "message": SUCCEEDED,
    }
    got = api.get(f"/v1/subscriptions/{sub_guid}")
    assert got.status_code == 410
    assert got.json() == {"code": "410", "message": "Subscription has been deleted"}
    assert (
        api.patch(
            f"/v1/subscriptions/{sub_guid}", {"is_subscribed": True}, format="json"
        ).status_code
        == 410
    )
    assert api.delete(f"/v1/subscriptions/{sub_guid}").status_code == 410
    stored = Subscription.objects.get(pk=sub.pk)
    assert stored.deleted is not None
    assert stored.is_subscribed is False


def test_every_guid_of_the_history_is_tombstoned(api, user, django_capture_on_commit_callbacks):
    first = subscribe(user, FEED)
    old = str(first.guid)
    new = "0f0e0d0c-0b0a-4909-8807-060504030201"
    assert (
        api.patch(f"/v1/subscriptions/{old}", {"new_guid": new}, format="json").status_code == 200
    )

    delete(api, old, django_capture_on_commit_callbacks, execute=True)

    assert api.get(f"/v1/subscriptions/{old}").status_code == 410
    assert api.get(f"/v1/subscriptions/{new}").status_code == 410


def test_second_delete_while_pending_returns_the_same_id(
    api, sub, django_capture_on_commit_callbacks
):
    first, _ = delete(api, sub.guid, django_capture_on_commit_callbacks)
    second, callbacks = delete(api, str(sub.guid).upper(), django_capture_on_commit_callbacks)

    assert second.status_code == 202
    assert second.json()["deletion_id"] == first.json()["deletion_id"]
    assert callbacks == []
    assert Deletion.objects.count() == 1


def test_resubscribe_after_the_request_wins(api, sub, django_capture_on_commit_callbacks):
    response, callbacks = delete(api, sub.guid, django_capture_on_commit_callbacks)
    time.sleep(0.002)  # timestamps have millisecond precision
    again = api.post("/v1/subscriptions", {"subscriptions": [{"feed_url": FEED}]}, format="json")
    assert again.status_code == 200

    callbacks[0]()  # the worker runs only now

    status = api.get(f"/v1/deletions/{response.json()['deletion_id']}").json()
    assert status["status"] == "FAILURE"
    assert status["message"] == RESUBSCRIBED
    got = api.get(f"/v1/subscriptions/{sub.guid}")
    assert got.status_code == 200
    assert got.json()["is_subscribed"] is True


def test_resubscribe_in_the_same_millisecond_as_the_request_wins(
    api, user, clock, django_capture_on_commit_callbacks
):
    """Changes of one user are stamped in order, a millisecond apart when the clock stands."""
    pinned = subscribe(user, FEED)
    response, callbacks = delete(api, pinned.guid, django_capture_on_commit_callbacks)
    again = api.post("/v1/subscriptions", {"subscriptions": [{"feed_url": FEED}]}, format="json")
    assert again.status_code == 200

    callbacks[0]()

    status = api.get(f"/v1/deletions/{response.json()['deletion_id']}").json()
    assert status["message"] == RESUBSCRIBED
    assert api.get(f"/v1/subscriptions/{pinned.guid}").json()["is_subscribed"] is True


def test_delete_in_the_same_millisecond_as_a_resubscribe_is_not_lost(
    api, user, clock, django_capture_on_commit_callbacks
):
    pinned = subscribe(user, FEED)
    first, callbacks = delete(api, pinned.guid, django_capture_on_commit_callbacks)
    api.post("/v1/subscriptions", {"subscriptions": [{"feed_url": FEED}]}, format="json")
    delete(api, pinned.guid, django_capture_on_commit_callbacks)

    callbacks[0]()

    status = api.get(f"/v1/deletions/{first.json()['deletion_id']}").json()
    assert status["status"] == "SUCCESS"
    assert api.get(f"/v1/subscriptions/{pinned.guid}").status_code == 410


def test_delete_after_a_resubscribe_while_pending_is_not_lost(
    api, sub, django_capture_on_commit_callbacks
):
    first, callbacks = delete(api, sub.guid, django_capture_on_commit_callbacks)
    time.sleep(0.002)
    again = api.post("/v1/subscriptions", {"subscriptions": [{"feed_url": FEED}]}, format="json")
    assert again.status_code == 200
    time.sleep(0.002)

    second, _ = delete(api, sub.guid, django_capture_on_commit_callbacks)
    callbacks[0]()  # the worker runs only now

    assert second.json()["deletion_id"] == first.json()["deletion_id"]
    status = api.get(f"/v1/deletions/{first.json()['deletion_id']}").json()
    assert status["status"] == "SUCCESS"
    assert api.get(f"/v1/subscriptions/{sub.guid}").status_code == 410


def test_adding_a_deleted_feed_again_resubscribes_it(api, sub, django_capture_on_commit_callbacks):
    delete(api, sub.guid, django_capture_on_commit_callbacks, execute=True)

    again = api.post("/v1/subscriptions", {"subscriptions": [{"feed_url": FEED}]}, format="json")

    assert again.json()["success"][0]["guid"] == str(sub.guid)
    got = api.get(f"/v1/subscriptions/{sub.guid}").json()
    assert got["is_subscribed"] is True
    assert "deleted" not in got


def test_delete_errors(api, other_api, sub):
    assert api.delete("/v1/subscriptions/2f6c4c3e-6d7a-4a39-9a3b-3c2f1e0d9c8b").status_code == 404
    assert other_api.delete(f"/v1/subscriptions/{sub.guid}").json() == {
        "code": "404",
        "message": "Resource not found",
    }
    bad = api.delete("/v1/subscriptions/not-a-guid")
    assert bad.status_code == 405
    assert bad.json()["code"] == "405"
    assert Deletion.objects.count() == 0


def test_delete_requires_a_token(anon, sub):
    response = anon.delete(f"/v1/subscriptions/{sub.guid}")
    assert response.status_code == 401
    assert response.json() == {"code": "401", "message": "User not authorized"}
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert Deletion.objects.count() == 0


def test_delete_runs_a_fixed_number_of_queries(
    api, sub, django_assert_max_num_queries, django_capture_on_commit_callbacks
):
    with django_assert_max_num_queries(8):
        response, _ = delete(api, sub.guid, django_capture_on_commit_callbacks)
    assert response.status_code == 202
