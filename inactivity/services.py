"""The policy for accounts left unused (docs/public-instance.md, "Inactive accounts"): with
INACTIVE_ACCOUNT_DAYS, an account nobody signed in to and no app synced for that long is
suspended, INACTIVE_WARNING_DAYS after its person was warned. Activity is counted as
accounts.activity counts it: an app's sync on any API is use, as a sign-in is, so nobody who
syncs every day is ever warned.

Celery beat's, and the home server's scheduler's, every INACTIVITY_SWEEP_INTERVAL; each run
handles at most BATCH accounts of each step, so a policy turned on over a million idle accounts
works through them over the runs, each short."""

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q

from accounts import activity
from accounts.models import Activity
from core import clock
from mail.models import Mail
from mail.services import mail_queue

logger = logging.getLogger(__name__)

BATCH = 2000


def inactive_accounts_sweep() -> dict[str, int]:
    """Warn the accounts that go idle within INACTIVE_WARNING_DAYS, and suspend those warned
    that long ago and unused since. Nothing when INACTIVE_ACCOUNT_DAYS is 0."""
    if not settings.INACTIVE_ACCOUNT_DAYS:
        return {"warned": 0, "suspended": 0}
    now = clock.now()
    idle_since = now - timedelta(days=settings.INACTIVE_ACCOUNT_DAYS)
    warning = timedelta(days=settings.INACTIVE_WARNING_DAYS)
    suspended = _suspend(idle_since=idle_since, warned_by=now - warning)
    warned = _warn(idle_since=idle_since + warning)
    if warned or suspended:
        logger.info("Inactive accounts: %s warned, %s suspended", warned, suspended)
    return {"warned": warned, "suspended": suspended}


def _not_warned_since_seen() -> Q:
    return Q(activity__warned__isnull=True) | Q(activity__warned__lt=F("activity__seen"))


def _warn(*, idle_since: Any) -> int:
    """Warn each account unused since `idle_since` that was not warned since it was last used:
    its warning's time noted (the start of its INACTIVE_WARNING_DAYS), and a mail queued to
    its address where there is mail."""
    idle = activity.idle_accounts(before=idle_since).filter(_not_warned_since_seen())
    users = list(idle.order_by("pk").only("pk", "email", "date_joined")[:BATCH])
    now = clock.now()
    for user in users:
        with transaction.atomic():
            Activity.objects.update_or_create(
                user_id=user.pk,
                defaults={"warned": now},
                create_defaults={"seen": user.date_joined, "warned": now},
            )
            if settings.MAIL_ENABLED and user.email:
                mail_queue(kind=Mail.Kind.INACTIVE, address=user.email, user=user)
    return len(users)


def _suspend(*, idle_since: Any, warned_by: Any) -> int:
    """Suspend each account unused since `idle_since` whose warning, given by `warned_by`, came
    after its last use."""
    due = activity.idle_accounts(before=idle_since).filter(
        activity__warned__lte=warned_by, activity__warned__gte=F("activity__seen")
    )
    user_ids = list(due.order_by("pk").values_list("pk", flat=True)[:BATCH])
    return sum(activity.account_suspend(user_id=pk, idle_since=idle_since) for pk in user_ids)
