"""Whether an account may still be used, as every request checks it: its state now (active, its
password, its username), the web process's cache of the users recently found active, and
whether an app password still stands."""

import copy
import threading
from collections.abc import Iterable
from datetime import timedelta
from typing import Any, NamedTuple

from cachetools import TTLCache
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction
from django.utils.crypto import constant_time_compare, salted_hmac

from accounts import invalidation
from accounts.models import AppPassword
from core import clock
from core.db import sql


def password_mark(password_hash: str) -> str:
    """A short keyed digest of the account's password hash, for the tokens' PASSWORD_CLAIM
    (accounts.authentication) and the active users' cache: it changes whenever the password
    does, and tells nothing of it."""
    digest = salted_hmac("accounts.password_mark", password_hash, algorithm="sha256")
    return digest.hexdigest()[:16]


class _ActiveUsers:
    """Users recently found active, with the mark of the password they had (`password_mark`),
    and for those an app session signed in, the user itself; kept for `AUTH_USER_CACHE_SECONDS`
    per process.

    Reading the user on every request costs a database round trip (bench/README.md,
    "accounts.active.active_users"). Only active users are kept, and a change to one
    (`forget`: a new password, a deactivation, a removal) is dropped at once by the process that
    made it and, once committed, announced to every other through Redis (accounts.invalidation).
    With Redis configured, a process trusts its cache only while it hears those announcements;
    without Redis there is one process, whose own forget is enough.

    A request that read the user before a change committed must not put back what the change's
    announcement just dropped: it takes `generation()` before its read and hands it to `add` or
    `add_user`, which add nothing if anything was forgotten since.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()  # gunicorn's gthread workers share the cache
        self._known: TTLCache[Any, tuple[str, AbstractBaseUser | None]] | None = None
        self._generation = 0  # bumped by every forget and clear
        self.changes = invalidation.Subscriber(forget=self._forget_announced, clear=self.clear)

    def _cache(self) -> TTLCache[Any, tuple[str, AbstractBaseUser | None]]:
        if self._known is None:  # made on first use, when the settings are known
            self._known = TTLCache(maxsize=100_000, ttl=settings.AUTH_USER_CACHE_SECONDS)
        return self._known

    def _trusted(self) -> bool:
        if not settings.AUTH_USER_CACHE_SECONDS:
            return False
        # Several processes: only while this one hears what the others change.
        return not invalidation.enabled() or self.changes.listening()

    def _get(self, user_id: Any) -> tuple[str, AbstractBaseUser | None] | None:
        if not self._trusted():
            return None
        with self._lock:
            return self._cache().get(user_id)

    def generation(self) -> int:
        """Taken before reading a user from the database, for `add` and `add_user`."""
        return self._generation

    def mark(self, user_id: Any) -> str | None:
        """The password mark of the user, if this process found them active a moment ago."""
        known = self._get(user_id)
        return None if known is None else known[0]

    def user(self, user_id: Any) -> AbstractBaseUser | None:
        """A copy of the user, if this process read them active a moment ago (`add_user`): each
        request may change its own."""
        known = self._get(user_id)
        return None if known is None or known[1] is None else copy.copy(known[1])

    def add(self, user_id: Any, mark: str, generation: int | None = None) -> None:
        """Remember an active user's mark, read since `generation` (None: the caller knows it
        is current)."""
        if settings.AUTH_USER_CACHE_SECONDS:
            with self._lock:
                if generation is None or generation == self._generation:
                    self._cache()[user_id] = (mark, None)

    def add_user(self, user: AbstractBaseUser, generation: int | None = None) -> None:
        """Remember an active user read whole (its password hash gives its mark), read since
        `generation` (None: the caller knows it is current)."""
        if settings.AUTH_USER_CACHE_SECONDS and user.is_active:
            with self._lock:
                if generation is None or generation == self._generation:
                    self._cache()[user.pk] = (password_mark(user.password), copy.copy(user))

    def forget(self, user_ids: Iterable[Any]) -> None:
        """Forget the users now, and again once the change commits, when it is announced to the
        other processes: a request reading the row before then would find them still active,
        and must not remember them."""
        user_ids = list(user_ids)
        self._forget(user_ids)
        transaction.on_commit(lambda: self._committed(user_ids))

    def _committed(self, user_ids: list[Any]) -> None:
        self._forget(user_ids)
        invalidation.publish(user_ids)

    def _forget_announced(self, user_ids: list[Any]) -> None:
        # As JSON gave them: the cache's keys are the user model's own (an int, a UUID ...).
        to_python = get_user_model()._meta.pk.to_python
        self._forget([to_python(user_id) for user_id in user_ids])

    def _forget(self, user_ids: list[Any]) -> None:
        with self._lock:
            self._generation += 1
            for user_id in user_ids:
                if self._known is not None:
                    self._known.pop(user_id, None)

    def clear(self) -> None:
        with self._lock:
            self._generation += 1
            self._known = None


active_users = _ActiveUsers()


class AccountState(NamedTuple):
    """What decides whether a remembered user may still be used: read on every request."""

    password: str
    is_active: bool
    username: str


def account_state_sql(table: str = "u") -> str:
    """The columns of AccountState, of the user table named `table` in a query."""
    model = get_user_model()
    return f"{table}.password, {table}.is_active, {table}.{model.USERNAME_FIELD}"


def account_state(user_id: Any) -> AccountState | None:
    """The account's state now: one prepared lookup by its key (core.db.sql)."""
    model = get_user_model()
    rows = sql.fetch(
        f"SELECT {account_state_sql()} FROM {model._meta.db_table} u WHERE u.id = %s",
        [user_id],
        _STATE_COLUMNS,
        prepare=True,
    )
    return AccountState(*rows[0]) if rows else None


_STATE_COLUMNS = sql.Columns(None, None, None)


def current_user(user_id: Any, state: AccountState | None = None) -> AbstractBaseUser | None:
    """The active user `user_id` as the database has it now: its state read (or `state`, read
    already with something else), and the user from this process's memory while that state is
    the one it was remembered with (else read again). So a new password, a new username or a
    deactivation made by any process counts at once, for the price of one small lookup."""
    if state is None:
        state = account_state(user_id)
    if state is None or not state.is_active:
        return None
    known = active_users.user(user_id)
    if (
        known is not None
        and constant_time_compare(known.password, state.password)
        and known.get_username() == state.username
    ):
        return known
    generation = active_users.generation()
    user = get_user_model().objects.filter(pk=user_id, is_active=True).first()
    if user is not None:
        active_users.add_user(user, generation)
    return user


def forget_changed_user(sender: Any, instance: AbstractBaseUser, **kwargs: Any) -> None:
    """Receiver of the user model's post_save and post_delete (AccountsConfig.ready)."""
    # The last login changes nothing any process decides on (password, active, username): a
    # save of it alone is neither forgotten nor announced, which would cost a round trip to
    # Redis, every process its entry of the user, and a sign-in its own (it remembers the user
    # it signed in only if no change came since it began: accounts.sessions). A sign-in stamps
    # it with an UPDATE, which sends no signal at all (accounts.services.login_stamp).
    if kwargs.get("update_fields") == frozenset({"last_login"}):
        return
    active_users.forget([instance.pk])


# An app password's last use is written at most once in this long, not on every request.
APP_PASSWORD_USE_PRECISION = timedelta(minutes=1)


def app_password_stands(
    *, user_id: Any, app_password_id: Any, password_mark_was: str | None = None
) -> bool:
    """Whether the app password is still there (not revoked) and its user active, and, given
    `password_mark_was`, the account's password still the one of that mark; notes its use (a
    write at most once per APP_PASSWORD_USE_PRECISION, so a busy app does not write on every
    request)."""
    if not isinstance(app_password_id, int) or isinstance(app_password_id, bool):
        return False
    found = (
        AppPassword.objects.filter(pk=app_password_id, user_id=user_id, user__is_active=True)
        .values_list("last_used", "user__password")
        .first()
    )
    if found is None:
        return False
    last_used, password_hash = found
    if password_mark_was is not None and not constant_time_compare(
        password_mark(password_hash), password_mark_was
    ):
        return False
    app_password_used(app_password_id, last_used=last_used)
    return True


def app_password_used(app_password_id: int, *, last_used: Any) -> None:
    """Note that an app signed in with it now, unless its last use, `last_used`, is less than
    APP_PASSWORD_USE_PRECISION old: a busy app does not write on every request."""
    now = clock.now()
    if last_used is None or last_used < now - APP_PASSWORD_USE_PRECISION:
        AppPassword.objects.filter(pk=app_password_id).update(last_used=now)
