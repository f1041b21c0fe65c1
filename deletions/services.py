"""Deleting a subscription, or a whole account: the request, the work a Celery worker does, and
the sweep.

The lifecycle (docs/api.md, "Deletion"): DELETE writes a PENDING Deletion and sends the task after
commit. The task claims the deletion under a row lock and does the whole deletion in one
transaction, so a redelivered or duplicate message finds it finished and does nothing. A periodic
sweep re-sends deletions left pending (lost message, broker down, worker killed) and fails them
after a bounded number of attempts, so none stays PENDING.

An account's deletion (docs/web.md, "Deleting an account") goes the same way: the request
deactivates the account at once and records a PENDING AccountDeletion; the worker deletes the user
with everything of it, in one transaction; a failure leaves everything and activates the account
again.
"""

import logging
import uuid
from contextlib import suppress
from datetime import timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import F, Q
from rest_framework_simplejwt.token_blacklist.models import BlacklistedToken, OutstandingToken

from accounts.active import active_users
from core import clock
from core.exceptions import InvalidInput, NotAuthorized
from deletions.models import AccountDeletion, Deletion, Work
from subscriptions.locks import lock_user_writes
from subscriptions.models import Subscription
from subscriptions.selectors import subscription_by_guid
from subscriptions.services import subscription_mark_deleted

logger = logging.getLogger(__name__)

RECEIVED = "Deletion request was received and will be processed"
PENDING = "Deletion is pending"
SUCCEEDED = "Subscription deleted successfully"
ROLLED_BACK = "The deletion process encountered an error and was rolled back"
RESUBSCRIBED = (
    "The subscription was changed after the deletion was requested, so the later change wins: "
    "nothing was deleted"
)
MERGED = "The subscription was merged into another before the deletion ran: nothing was deleted"
ACCOUNT_DELETED = "The account and everything of it were deleted"
ACCOUNT_KEPT = (
    "The account could not be deleted and nothing of it was: it is active again, so you can "
    "sign in and try again"
)


def deletion_request(*, user: Any, guid: uuid.UUID) -> Deletion:
    """Record a PENDING deletion of the subscription that has or had `guid`.

    A deletion already pending for it is returned as it is. The task is sent after commit.
    """
    with transaction.atomic():
        now = lock_user_writes(user.pk)
        sub = subscription_by_guid(user=user, guid=guid, lock=True)
        pending = Deletion.objects.filter(subscription=sub, status=Deletion.Status.PENDING).first()
        if pending is not None:
            if sub.subscription_changed >= pending.requested:
                # Re-subscribed since that request: this DELETE is the latest word, not that one.
                pending.requested = now
                pending.save(update_fields=["requested"])
            return pending
        deletion = Deletion.objects.create(
            user=user, subscription=sub, guid=guid, requested=now, sends=1, last_sent=now
        )
        transaction.on_commit(partial(deletion_send, deletion_id=deletion.pk))
    return deletion


def deletion_send(*, deletion_id: int) -> None:
    """Hand the deletion to a worker (or, without a broker, run it now).

    A broker that cannot be reached is logged, not raised: the row is PENDING and the sweep
    sends it again once the broker is back.
    """
    from deletions.tasks import process_deletion

    try:
        process_deletion.delay(deletion_id)
    except Exception:  # whatever the broker client raised, the sweep will retry
        logger.warning(
            "Could not send deletion %s; the sweep will resend it", deletion_id, exc_info=True
        )
        # Marked unsent, the next sweep sends it as soon as the broker answers again, without
        # waiting DELETION_RESEND_AFTER.
        Deletion.objects.filter(pk=deletion_id, status=Deletion.Status.PENDING).update(
            last_sent=None
        )


def deletion_process(*, deletion_id: int) -> str:
    """Perform one deletion in one transaction; returns the status it ended with.

    An error rolls everything back and propagates: the task retries transient database errors
    with backoff and ends the deletion as FAILURE on any other, or when retries run out.
    """
    # Counted outside the transaction, so that a worker killed mid-way still counts: a deletion
    # that kills every worker that starts it ends after DELETION_MAX_ATTEMPTS.
    started = Deletion.objects.filter(pk=deletion_id, status=Deletion.Status.PENDING).update(
        attempts=F("attempts") + 1
    )
    if not started:
        return "skipped"  # a duplicate or redelivered message: the work is done
    user_id = Deletion.objects.values_list("user_id", flat=True).get(pk=deletion_id)
    with transaction.atomic():
        # The user first, then the deletion: the order every writer of this user's rows takes.
        # An account being deleted is inactive: what it asked for before still gets done.
        try:
            now = lock_user_writes(user_id, inactive=True)
        except NotAuthorized:
            return "skipped"  # the account was deleted meanwhile, and this deletion with it
        deletion = Deletion.objects.select_for_update().get(pk=deletion_id)
        if deletion.status != Deletion.Status.PENDING:
            return "skipped"
        if deletion.attempts > settings.DELETION_MAX_ATTEMPTS:
            return _finish(
                deletion, Deletion.Status.FAILURE, _out_of_attempts(deletion.attempts - 1)
            )
        sub = (
            Subscription.objects.select_for_update().filter(pk=deletion.subscription_id).first()
            if deletion.subscription_id
            else None
        )
        if sub is None:
            return _finish(deletion, Deletion.Status.FAILURE, MERGED)
        if sub.subscription_changed >= deletion.requested:
            return _finish(deletion, Deletion.Status.FAILURE, RESUBSCRIBED)
        if sub.deleted is not None:
            return _finish(deletion, Deletion.Status.SUCCESS, SUCCEEDED)
        subscription_mark_deleted(sub, now)
        return _finish(deletion, Deletion.Status.SUCCESS, SUCCEEDED)


def _out_of_attempts(count: int) -> str:
    return f"The deletion could not be processed after {count} attempts and was rolled back"


def _finish(deletion: Work, status: str, message: str) -> str:
    deletion.status = status
    deletion.message = message
    deletion.finished = clock.now()
    deletion.save(update_fields=["status", "message", "finished"])
    return status


def deletion_fail(*, deletion_id: int, message: str = ROLLED_BACK) -> None:
    """End a deletion that is still PENDING as FAILURE (its work was rolled back)."""
    with transaction.atomic():
        deletion = Deletion.objects.select_for_update().filter(pk=deletion_id).first()
        if deletion is not None and deletion.status == Deletion.Status.PENDING:
            _finish(deletion, Deletion.Status.FAILURE, message)


def deletion_retry(*, deletion_ids: list[int]) -> int:
    """Staff action: send FAILURE or PENDING deletions through the normal flow again.

    The deletion keeps its request time, so the worker applies the same rules as the first
    time: a subscription changed since the request is not deleted. Deletions whose subscription
    is gone or has another deletion pending are skipped. Returns how many were sent.
    """
    sent = 0
    now = clock.now()
    with transaction.atomic():
        for deletion in Deletion.objects.select_for_update().filter(pk__in=deletion_ids):
            if deletion.status == Deletion.Status.SUCCESS:
                continue
            if deletion.status == Deletion.Status.FAILURE:
                if deletion.subscription_id is None or (
                    Deletion.objects.filter(
                        subscription_id=deletion.subscription_id, status=Deletion.Status.PENDING
                    ).exists()
                ):
                    continue
                deletion.status = Deletion.Status.PENDING
                deletion.message = ""
                deletion.finished = None
                deletion.attempts = 0
                deletion.sends = 0
            deletion.sends += 1
            deletion.last_sent = now
            deletion.save()
            transaction.on_commit(partial(deletion_send, deletion_id=deletion.pk))
            sent += 1
    return sent


def deletion_sweep(*, resend_after: float | None = None) -> dict[str, int]:
    """Re-send the deletions (of subscriptions and of accounts) still pending that need it
    (docs/api.md, "Deletion"): at once those whose last send failed (the broker was away); and
    those sent more than `resend_after` seconds ago (default: DELETION_RESEND_AFTER) while the
    deletions' queue is empty, whose message was lost or taken by a worker that died (Redis would
    hand it out again only after its visibility timeout). Fail those already sent
    DELETION_MAX_SENDS times, whose messages keep getting lost. Run by Celery beat.

    While the queue holds messages, the workers are behind or away, and the deletions wait in
    it: sending them again would only queue copies. So none is sent twice in normal operation.
    """
    now = clock.now()
    if resend_after is None:
        resend_after = settings.DELETION_RESEND_AFTER
    lost = Q(last_sent__lt=now - timedelta(seconds=resend_after))
    due = Q(last_sent__isnull=True) | lost if _deletions_queued() == 0 else Q(last_sent=None)
    resent = failed = 0
    for queryset, send, finish in (
        (Deletion.objects.all(), deletion_send, _finish),
        (AccountDeletion.objects.all(), account_deletion_send, _account_finish),
    ):
        with transaction.atomic():
            stale = (
                queryset.select_for_update(skip_locked=True)
                .filter(due, status=Deletion.Status.PENDING)
                .order_by(F("last_sent").asc(nulls_first=True))[: settings.DELETION_SWEEP_BATCH]
            )
            for deletion in stale:
                if deletion.sends >= settings.DELETION_MAX_SENDS:
                    finish(
                        deletion,
                        Deletion.Status.FAILURE,
                        f"The deletion was sent {deletion.sends} times without being processed "
                        "and was rolled back",
                    )
                    failed += 1
                    continue
                deletion.sends += 1
                deletion.last_sent = now
                deletion.save(update_fields=["sends", "last_sent"])
                transaction.on_commit(partial(send, deletion_id=deletion.pk))
                resent += 1
    return {"resent": resent, "failed": failed}


def _deletions_queued() -> int:
    """How many messages wait in the deletions' queue (0 when tasks run in-process); -1 when
    the broker cannot tell (then nothing is sent by age this time)."""
    from deletions.tasks import process_deletion

    app = process_deletion.app
    if app.conf.task_always_eager:
        return 0
    try:
        with app.connection_for_read() as conn:
            # Not passive: Redis keeps no key for an empty queue, which a passive declare takes
            # for a queue that does not exist.
            return int(conn.default_channel.queue_declare(queue="deletions")[1])
    except Exception:  # whatever the broker client raised: leave it to the next sweep
        logger.warning("Could not read the deletions' queue length", exc_info=True)
        return -1


def account_deletion_request(*, user: Any) -> AccountDeletion:
    """Sign the user out everywhere and have the account deleted; returns the deletion (the one
    already pending, if any). The task is sent after commit.

    The account is deactivated now: its sessions, gpodder credentials and app passwords stop
    working at once, its refresh tokens are revoked, and its access tokens are refused at once
    by every web process (accounts.invalidation).
    """
    staff = get_user_model().objects.filter(is_staff=True, is_active=True)
    if user.is_staff and not staff.exclude(pk=user.pk).exists():
        raise InvalidInput(
            "This is the only staff account: make another one staff first, or nobody could run "
            "the service's admin"
        )
    with transaction.atomic():
        # Inactive: asked for already (the pending one is returned). Gone: NotAuthorized.
        now = lock_user_writes(user.pk, inactive=True)
        pending = AccountDeletion.objects.filter(
            user=user, status=AccountDeletion.Status.PENDING
        ).first()
        if pending is not None:
            return pending
        get_user_model().objects.filter(pk=user.pk).update(is_active=False)
        active_users.forget([user.pk])
        outstanding = OutstandingToken.objects.filter(user=user, blacklistedtoken__isnull=True)
        BlacklistedToken.objects.bulk_create(
            [BlacklistedToken(token=token) for token in outstanding], ignore_conflicts=True
        )
        deletion = AccountDeletion.objects.create(
            user=user, username=user.get_username(), requested=now, sends=1, last_sent=now
        )
        transaction.on_commit(partial(account_deletion_send, deletion_id=deletion.pk))
    return deletion


def account_deletion_send(*, deletion_id: int) -> None:
    """Hand the account's deletion to a worker (or, without a broker, run it now); a broker
    that cannot be reached leaves it to the sweep, as deletion_send does."""
    from deletions.tasks import process_account_deletion

    try:
        process_account_deletion.delay(deletion_id)
    except Exception:  # whatever the broker client raised, the sweep will retry
        logger.warning(
            "Could not send account deletion %s; the sweep will resend it",
            deletion_id,
            exc_info=True,
        )
        AccountDeletion.objects.filter(
            pk=deletion_id, status=AccountDeletion.Status.PENDING
        ).update(last_sent=None)


def account_deletion_process(*, deletion_id: int) -> str:
    """Delete the account with everything of it, in one transaction; returns the status it
    ended with. Every app's rows go by the user's cascade (subscriptions with their histories,
    devices, episode actions, deletions, app passwords, tokens). An error rolls it all back and
    propagates, as in deletion_process."""
    started = AccountDeletion.objects.filter(
        pk=deletion_id, status=AccountDeletion.Status.PENDING
    ).update(attempts=F("attempts") + 1)
    if not started:
        return "skipped"  # a duplicate or redelivered message: the work is done
    user_id = AccountDeletion.objects.values_list("user_id", flat=True).get(pk=deletion_id)
    with transaction.atomic():
        if user_id is not None:
            # No write of the account runs alongside. Gone already (a duplicate of this message,
            # or staff): the deletion's row, read next, says what is left to do.
            with suppress(NotAuthorized):
                lock_user_writes(user_id, inactive=True)
        deletion = AccountDeletion.objects.select_for_update().get(pk=deletion_id)
        if deletion.status != AccountDeletion.Status.PENDING:
            return "skipped"
        if deletion.attempts > settings.DELETION_MAX_ATTEMPTS:
            return _account_finish(
                deletion, AccountDeletion.Status.FAILURE, _out_of_attempts(deletion.attempts - 1)
            )
        if deletion.user_id is not None:
            get_user_model().objects.filter(pk=deletion.user_id).delete()
        return _account_finish(deletion, AccountDeletion.Status.SUCCESS, ACCOUNT_DELETED)


def _account_finish(deletion: Any, status: str, message: str) -> str:
    """End an account's deletion; a failed one activates the account again, since nothing of
    it was deleted."""
    if status == AccountDeletion.Status.FAILURE:
        message = f"{message}. {ACCOUNT_KEPT}"
        if deletion.user_id is not None:
            get_user_model().objects.filter(pk=deletion.user_id).update(is_active=True)
    deletion.status = status
    deletion.message = message
    deletion.finished = clock.now()
    deletion.save(update_fields=["status", "message", "finished"])
    return status


def account_deletion_fail(*, deletion_id: int) -> None:
    """End an account's deletion that is still PENDING as FAILURE (its work was rolled back)."""
    with transaction.atomic():
        deletion = AccountDeletion.objects.select_for_update().filter(pk=deletion_id).first()
        if deletion is not None and deletion.status == AccountDeletion.Status.PENDING:
            _account_finish(deletion, AccountDeletion.Status.FAILURE, ROLLED_BACK)
