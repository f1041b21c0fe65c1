"""The deletion admin (docs/operations.md, "The admin"): staff filter deletions by status, read
one, and send a failed one again through the service."""

from datetime import timedelta
from typing import Any

from deletions.models import Deletion
from subscriptions.models import Subscription
from tests.helpers import listed, make_deletion

DELETIONS = "/admin/deletions/deletion/"


def test_filter_deletions_by_status(admin_client, alice):
    failed = make_deletion(alice, "FAILURE")
    make_deletion(alice, "SUCCESS")
    make_deletion(alice, "PENDING")

    assert listed(admin_client, f"{DELETIONS}?status__exact=FAILURE") == {failed.pk}
    assert len(listed(admin_client, DELETIONS)) == 3


def test_deletion_change_page_loads(admin_client, alice):
    deletion = make_deletion(alice, "FAILURE")

    response = admin_client.get(f"{DELETIONS}{deletion.pk}/change/")

    assert response.status_code == 200
    assert str(deletion.guid) in response.content.decode()


def failed_deletion(sub: Subscription, **extra: Any) -> Deletion:
    """A failed deletion of `sub`, stamped as deletion_request stamps it: after its last change."""
    return Deletion.objects.create(
        user=sub.user,
        subscription=sub,
        guid=sub.guid,
        status=Deletion.Status.FAILURE,
        requested=sub.subscription_changed + timedelta(milliseconds=1),
        **extra,
    )


def test_retry_action_reruns_a_failed_deletion_through_the_service(
    admin_client, alice, alpha, django_capture_on_commit_callbacks
):
    deletion = failed_deletion(
        alpha, message="The deletion process encountered an error and was rolled back"
    )

    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            "/admin/deletions/deletion/",
            {"action": "retry", "_selected_action": [deletion.pk]},
            follow=True,
        )

    assert response.status_code == 200
    assert "Sent 1 deletion(s) again." in response.content.decode()
    deletion.refresh_from_db()
    assert deletion.status == Deletion.Status.SUCCESS
    assert Subscription.objects.get(pk=alpha.pk).deleted is not None


def test_retry_action_from_the_failure_filter_reports_no_skips(
    admin_client, alice, alpha, django_capture_on_commit_callbacks
):
    """Sending the deletion again takes it out of the FAILURE filter the list was shown with."""
    deletion = failed_deletion(alpha)

    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            "/admin/deletions/deletion/?status__exact=FAILURE",
            {"action": "retry", "_selected_action": [deletion.pk]},
            follow=True,
        )

    page = response.content.decode()
    assert "Sent 1 deletion(s) again." in page
    assert "Skipped" not in page


def test_retry_action_skips_successful_deletions(admin_client, alice, alpha):
    deletion = Deletion.objects.create(
        user=alice,
        subscription=alpha,
        guid=alpha.guid,
        status=Deletion.Status.SUCCESS,
        requested=alpha.subscription_changed,
    )

    response = admin_client.post(
        "/admin/deletions/deletion/",
        {"action": "retry", "_selected_action": [deletion.pk]},
        follow=True,
    )

    assert "Skipped 1" in response.content.decode()
    deletion.refresh_from_db()
    assert deletion.status == Deletion.Status.SUCCESS
