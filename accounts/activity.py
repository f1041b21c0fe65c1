"""When each account was last used, counted the way people use the service: its last sign-in
anywhere, or its last request an app's credentials answered on any of the three APIs
(docs/public-instance.md, "Inactive accounts"). A person who syncs AntennaPod every day and
never opens the pages is active every day.

And the suspension of an account idle past INACTIVE_ACCOUNT_DAYS (the sweep is the inactivity
app's): it signs in nowhere and syncs through no API, keeps everything, and its person lifts it
by signing in on the pages, or by a password reset link."""

import logging
import threading
from datetime import datetime, timedelta
from typing import Any

from cachetools import TTLCache
from django.contrib.auth import get_user_model
from django.db import DatabaseError, transaction
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.utils.functional import LazyObject

from accounts.active import active_users
from accounts.models import Activity
from core import clock

logger = logging.getLogger(__name__)

# An account's activity is written at most once in this long by each process: the figures it
# feeds count days.
PRECISION = timedelta(hours=1)


class _Noted:
    """The accounts this process wrote the activity of within PRECISION."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # gunicorn's gthread workers share it
        self._ids: TTLCache[Any, bool] = TTLCache(maxsize=100_000, ttl=PRECISION.total_seconds())

    def first(self, user_id: Any) -> bool:
        """Whether `user_id` is not noted yet; noted from now on."""
        with self._lock:
            if user_id in self._ids:
                return False
            self._ids[user_id] = True
            return True

    def clear(self) -> None:
        with self._lock:
            self._ids.clear()


noted = _Noted()


def activity_seen(user_id: Any, *, at: datetime | None = None) -> None:
    """Note that the account is used now (or `at`), unless this process did within PRECISION.
    One statement; a database error is logged, never raised, outside a transaction: what the
    account did is done."""
    if not noted.first(user_id):
        return
    try:
        Activity.objects.bulk_create(
            [Activity(user_id=user_id, seen=at or clock.now())],
            update_conflicts=True,
            unique_fields=["user"],
            update_fields=["seen"],
        )
    except DatabaseError:
        if transaction.get_connection().in_atomic_block:
            raise
        # The account deleted meanwhile, or the database away: the next request notes it.
        logger.info("an account's activity was not noted", exc_info=True)
        noted._ids.pop(user_id, None)


class ActivityMiddleware:
    """Notes the activity of an app's request that its credentials answered (below 400), on
    any API: DRF and the fast path leave the user they authenticated on the request. The pages'
    user is Django's lazy one, never read here: a person on the pages is seen when they sign
    in."""

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> Any:
        response = self.get_response(request)
        if response.status_code < 400:
            user = request.__dict__.get("user")
            if user is not None and not isinstance(user, LazyObject) and user.is_authenticated:
                activity_seen(user.pk)
        return response


# --- suspension --------------------------------------------------------------------------------


def suspended() -> Q:
    """The accounts suspended for inactivity (of the user model)."""
    return Q(is_active=False, activity__suspended__isnull=False)


def active_or_suspended() -> Q:
    """The accounts that are on, or suspended for inactivity: those a reset link may be for."""
    return Q(is_active=True) | suspended()


def suspension_of(user: Any) -> datetime | None:
    """When the account was suspended for inactivity; None when it is not."""
    if user.is_active:
        return None
    return Activity.objects.filter(user_id=user.pk).values_list("suspended", flat=True).first()


def warning_of(user: Any) -> Activity | None:
    """The account's activity while it stands warned of its suspension: on, and unused since
    the warning. None otherwise."""
    if not user.is_active:
        return None
    row = Activity.objects.filter(user_id=user.pk, warned__isnull=False).first()
    if row is None or row.warned is None or row.warned < row.seen:
        return None
    return row


def suspension_lift(*, user_id: Any) -> bool:
    """Turn on an account suspended for inactivity, as its person comes back: seen now, its
    warning forgotten. False, and nothing changed, when it is not suspended (staff turned it
    off, say)."""
    with transaction.atomic():
        found = Activity.objects.select_for_update().filter(
            user_id=user_id, suspended__isnull=False, user__is_active=False
        )
        if not found.update(suspended=None, warned=None, seen=clock.now()):
            return False
        get_user_model().objects.filter(pk=user_id).update(is_active=True)
    return True


def account_suspend(*, user_id: Any, idle_since: datetime) -> bool:
    """Suspend an idle account: off, as staff's turn off (every process refuses its sessions,
    tokens and app passwords at once), marked as suspended for inactivity. False, and nothing
    changed, when it was used since `idle_since`, was turned off, or was made staff meanwhile."""
    with transaction.atomic():
        user = (
            idle_accounts(before=idle_since)
            .select_for_update(of=("self",))
            .filter(pk=user_id)
            .first()
        )
        if user is None:
            return False
        now = clock.now()
        Activity.objects.update_or_create(
            user_id=user_id,
            defaults={"suspended": now},
            create_defaults={"seen": user.date_joined, "suspended": now},
        )
        get_user_model().objects.filter(pk=user_id).update(is_active=False)
    active_users.forget([user_id])  # update() sends no signal
    return True


def suspended_user_by_password(*, username: str, password: str) -> Any:
    """The account suspended for inactivity that `username` and its own password name, as
    Django's backend finds an account; None otherwise. The backend refuses an account that is
    off before it checks the password: this checks it for a suspended one only."""
    model = get_user_model()
    user = model.objects.filter(suspended(), **{model.USERNAME_FIELD: username}).first()
    if user is None or not user.check_password(password):
        return None
    return user


def idle_accounts(*, before: datetime) -> QuerySet[Any]:
    """The accounts that may go idle: on, not staff, and not seen since `before` (one without
    an activity has not been seen since it joined)."""
    seen_before = Q(activity__seen__lte=before) | Q(activity__isnull=True, date_joined__lte=before)
    return get_user_model().objects.filter(
        seen_before, is_active=True, is_staff=False, is_superuser=False
    )
