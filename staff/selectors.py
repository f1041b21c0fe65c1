"""The admin's overview, the user page's counts, and the People page's list of accounts
(docs/operations.md, "The admin"): each figure
in one query that an index answers, or that a window of days bounds, so that the page reads as
much at a million accounts as at ten (staff migration 0001 has the indexes; `make scale` checks
the plans).

Active, in a window of days: an account that signed in anywhere, or whose app's request its
credentials answered on any of the three APIs, as accounts.activity notes it (to within an
hour).

Syncs per day, from the rows that have a time: the uploads of episode actions (an upload stamps
its actions with a second of its own, so each (account, second) is one upload) and the
subscriptions changed, each counted on the day of its last change, which a later change of it
moves.

Of the lists behind the figures, it reads rows only for a viewer the admin would open that list
for (Viewer): a failing feed's URL can carry its subscriber's token, a failed deletion names its
account. Staff whom a list would answer 403 get its counts alone.
"""

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from functools import partial
from typing import Any

from celery import current_app
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.paginator import Page
from django.db import connection
from django.db.models import (
    Count,
    Exists,
    F,
    IntegerField,
    Max,
    Min,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
)
from django.db.models.functions import TruncDate

from accounts.addresses import confirmed_among
from accounts.models import Activity, AwaitingConfirmation
from core import clock
from core.admin import EstimatedCountPaginator, rows_counted
from core.exceptions import NotFound
from deletions.models import AccountDeletion, Deletion
from episodes.models import EpisodeAction
from factors.selectors import factor_annotations, factor_kinds
from feedchecks.models import FeedCheck
from feedchecks.services import background_checks_waiting
from gpodder.models import Device
from mail.selectors import mail_counts
from subscriptions.models import Subscription

ACTIVE_DAYS = (7, 30)
SYNC_DAYS = 14
FAILING_FEEDS_SHOWN = 20
FAILED_DELETIONS_SHOWN = 10
# A broker that does not answer within this long is shown as not answering.
BROKER_TIMEOUT = 2.0


@dataclass(frozen=True)
class Rows:
    """A number of rows: counted (`exact`), or past the count's cap (COUNT_CAP + 1: "more
    than"), or PostgreSQL's estimate of a big table ("about")."""

    n: int
    exact: bool = True

    def __str__(self) -> str:
        cap = EstimatedCountPaginator.COUNT_CAP
        if self.exact:
            return f"{self.n:,}"
        return f"about {self.n:,}" if self.n > cap + 1 else f"more than {cap:,}"


@dataclass(frozen=True)
class SyncDay:
    day: date
    uploads: int = 0
    subscriptions: int = 0
    accounts: int = 0


@dataclass(frozen=True)
class Viewer:
    """The lists behind the overview that its reader may open in the admin (each its admin's
    view permission: staff.admin.overview_viewer). Their rows, and links to them, are for those
    who may; anyone else gets the counts, which name nothing."""

    accounts: bool = False  # and so usernames, wherever the overview would name one
    deletions: bool = False
    account_deletions: bool = False
    feed_checks: bool = False
    mail: bool = False


@dataclass(frozen=True)
class Failed:
    """A failed deletion as the overview lists it."""

    pk: int
    username: str | None  # None: its viewer may not see the accounts
    finished: datetime | None
    message: str


@dataclass(frozen=True)
class Deletions:
    """One kind of deletion request (of subscriptions, of accounts)."""

    pending: int
    failed: int
    oldest_pending: datetime | None
    latest_failed: list[Failed]  # empty unless its viewer may open the list


@dataclass(frozen=True)
class Queue:
    name: str
    waiting: int | None  # None: the broker did not answer


@dataclass(frozen=True)
class Queues:
    """The broker's queues (`broker`), or, without one, what this process runs itself."""

    broker: bool
    queues: list[Queue] = field(default_factory=list)
    # Taken by a worker and not yet acknowledged (running, or about to): every queue's.
    unacknowledged: int | None = None
    # Without a broker: the requests whose feed checks this process's threads have yet to run.
    feed_checks: int = 0


@dataclass(frozen=True)
class Overview:
    viewer: Viewer
    accounts: Rows
    active: dict[int, int]  # days -> accounts active in the last that many
    sync_days: list[SyncDay]
    deletions: Deletions
    account_deletions: Deletions
    failing_feeds: int
    latest_failing: list[FeedCheck]
    queues: Queues
    mail: dict[str, int]  # state -> mails (mail.selectors.mail_counts)


def overview_read(*, viewer: Viewer) -> Overview:
    now = clock.now()
    failing = FeedCheck.objects.filter(result=FeedCheck.Result.ERROR)
    latest_failing: list[FeedCheck] = []
    if viewer.feed_checks:
        latest = failing.order_by("-checked", "-id").only("url", "checked", "error")
        latest_failing = list(latest[:FAILING_FEEDS_SHOWN])
    # A deletion's account by its name's field: the model's USERNAME_FIELD, as get_username.
    username = get_user_model().USERNAME_FIELD
    return Overview(
        viewer=viewer,
        accounts=Rows(*rows_counted(get_user_model())),
        active=accounts_active(now=now),
        sync_days=syncs_per_day(now=now),
        deletions=_deletions(
            Deletion.objects.all(),
            listed=viewer.deletions,
            username=f"user__{username}" if viewer.accounts else None,
        ),
        account_deletions=_deletions(
            AccountDeletion.objects.all(),
            listed=viewer.account_deletions,
            username="username" if viewer.accounts else None,
        ),
        failing_feeds=failing.count(),
        latest_failing=latest_failing,
        queues=queues_read(),
        mail=mail_counts(),
    )


def accounts_active(*, now: datetime) -> dict[int, int]:
    """How many accounts were active (accounts.activity) in the last days of ACTIVE_DAYS, in
    one query that reads the longest window's rows by the index on their time."""
    since = {days: now - timedelta(days=days) for days in ACTIVE_DAYS}
    counted = Activity.objects.filter(seen__gte=since[max(ACTIVE_DAYS)]).aggregate(
        **{str(days): Count("pk", filter=Q(seen__gte=since[days])) for days in ACTIVE_DAYS}
    )
    return {days: int(counted[str(days)]) for days in ACTIVE_DAYS}


def syncs_per_day(*, now: datetime) -> list[SyncDay]:
    """The last SYNC_DAYS days (UTC), today's so far last: uploads of episode actions,
    subscriptions changed, and the accounts that did either; in one query, from those days'
    rows alone."""
    today = now.date()
    first = today - timedelta(days=SYNC_DAYS - 1)
    start = datetime.combine(first, datetime.min.time(), tzinfo=now.tzinfo)
    kind = partial(Value, output_field=IntegerField())
    uploads = (
        EpisodeAction.objects.filter(received__gte=start)
        .annotate(kind=kind(1), who=F("user_id"), at=F("received"), day=TruncDate("received"))
        .values_list("kind", "who", "at", "day")
        .distinct()
    )
    changes = (
        Subscription.objects.filter(subscription_changed__gte=start)
        .annotate(kind=kind(2), day=TruncDate("subscription_changed"))
        .values_list("kind", "user_id", "subscription_changed", "day")
    )
    synced, params = uploads.union(changes, all=True).query.sql_with_params()
    # By account and day first, then by day: two hash aggregates, where COUNT(DISTINCT) would
    # sort every row of the fortnight.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT day, SUM(uploads), SUM(changes), COUNT(*) FROM"
            " (SELECT day, who, SUM(CASE WHEN kind = 1 THEN 1 ELSE 0 END) AS uploads,"
            " SUM(CASE WHEN kind = 2 THEN 1 ELSE 0 END) AS changes"
            f" FROM ({synced}) AS synced GROUP BY day, who) AS accounts GROUP BY day",
            params,
        )
        found = {
            _as_date(day): SyncDay(_as_date(day), int(up), int(subs), int(accounts))
            for day, up, subs, accounts in cursor.fetchall()
        }
    days = (first + timedelta(days=n) for n in range(SYNC_DAYS))
    return [found.get(day, SyncDay(day)) for day in days]


def _as_date(value: Any) -> date:
    """A date as the database gives it back in a raw query (SQLite: as text)."""
    return value if isinstance(value, date) else date.fromisoformat(str(value))


def _deletions(requests: QuerySet[Any], *, listed: bool, username: str | None) -> Deletions:
    """The pending and failed requests of one kind (Deletion, AccountDeletion), read by the
    index on their status the sweep reads; and, when `listed`, the latest to fail, with their
    message and, by the `username` lookup when given, their account's name."""
    status = Deletion.Status  # AccountDeletion's too (deletions.models.Work)
    statuses = {
        row["status"]: row
        for row in requests.filter(status__in=[status.PENDING, status.FAILURE])
        .values("status")
        .annotate(n=Count("pk"), oldest=Min("requested"))
        .order_by()
    }
    pending = statuses.get(status.PENDING, {})
    latest: list[Failed] = []
    if listed:
        failed = requests.filter(status=status.FAILURE).order_by(
            F("finished").desc(nulls_last=True), "-pk"
        )
        fields = ["pk", "finished", "message", *([username] if username else [])]
        latest = [
            Failed(
                pk=row["pk"],
                username=str(row[username]) if username else None,
                finished=row["finished"],
                message=row["message"],
            )
            for row in failed.values(*fields)[:FAILED_DELETIONS_SHOWN]
        ]
    return Deletions(
        pending=pending.get("n", 0),
        failed=statuses.get(status.FAILURE, {}).get("n", 0),
        oldest_pending=pending.get("oldest"),
        latest_failed=latest,
    )


def queues_read() -> Queues:
    """With a broker (REDIS_URL), how many messages wait in each queue the service declares
    (settings.QUEUES), in one round trip: kombu keeps a queue as a Redis list per priority.
    Without one (tasks run in-process), the feed checks this process's threads have yet to run;
    deletions then run right after the request that asked, and their pending count says the
    rest."""
    conf = current_app.conf
    if conf.task_always_eager:
        return Queues(broker=False, feed_checks=background_checks_waiting())
    names = list(settings.QUEUES)
    unread = Queues(broker=True, queues=[Queue(name, None) for name in names])
    url = str(conf.broker_url or "")
    if not url.startswith(("redis://", "rediss://")):
        return unread
    # Loaded here, with a broker only: redis-py is 21 MB of a process (core.lazyredis).
    import redis
    from kombu.transport.redis import PRIORITY_STEPS, Channel

    steps = len(PRIORITY_STEPS)
    client = redis.Redis.from_url(
        url, socket_timeout=BROKER_TIMEOUT, socket_connect_timeout=BROKER_TIMEOUT
    )
    try:
        with client.pipeline(transaction=False) as pipe:
            for name in names:
                for step in PRIORITY_STEPS:
                    pipe.llen(_priority_key(name, step))
            pipe.hlen(Channel.unacked_key)
            lengths = [int(n) for n in pipe.execute()]
    except redis.RedisError:
        return unread
    finally:
        client.close()
    queues = [
        Queue(name, sum(lengths[n * steps : (n + 1) * steps])) for n, name in enumerate(names)
    ]
    return Queues(broker=True, queues=queues, unacknowledged=lengths[-1])


def _priority_key(queue: str, step: int) -> str:
    """The Redis list of a queue's messages of one priority step, as kombu names it."""
    from kombu.transport.redis import Channel

    return f"{queue}{Channel.sep}{step}" if step else queue


@dataclass(frozen=True)
class AccountRows:
    """What one account has in each table its user page links to, counted up to the cap."""

    subscriptions: Rows
    devices: Rows
    episode_actions: Rows
    deletions: Rows
    account_deletions: Rows


def account_rows(*, user_id: Any) -> AccountRows:
    """Each count by the table's index on its user, and at most COUNT_CAP + 1 rows read: an
    account with a million episode actions costs its page no more than one with ten thousand."""

    def counted(rows: QuerySet[Any]) -> Rows:
        cap = EstimatedCountPaginator.COUNT_CAP
        n = int(rows[: cap + 1].count())
        return Rows(n, exact=n <= cap)

    return AccountRows(
        subscriptions=counted(Subscription.objects.filter(user_id=user_id)),
        devices=counted(Device.objects.filter(user_id=user_id)),
        episode_actions=counted(EpisodeAction.objects.filter(user_id=user_id)),
        deletions=counted(Deletion.objects.filter(user_id=user_id)),
        account_deletions=counted(AccountDeletion.objects.filter(user_id=user_id)),
    )


PEOPLE_PER_PAGE = 50


@dataclass(frozen=True)
class Person:
    """An account as the People page lists it."""

    pk: Any
    username: str
    date_joined: datetime
    last_login: datetime | None  # its last sign-in: the pages, the admin, an app's /v1/ login
    last_sync: datetime | None  # its devices' last request (gpodder and Nextcloud syncs)
    last_active: datetime | None  # its last sign-in or app's request (accounts.activity)
    suspended: datetime | None  # when it was suspended for inactivity, if it is
    is_active: bool
    is_staff: bool
    is_superuser: bool
    being_deleted: bool  # its person asked for its deletion, which a worker has yet to finish
    email: str
    email_confirmed: bool  # the address is the one its person confirmed (accounts.addresses)
    awaiting: bool  # registered, off until its address is confirmed
    factors: tuple[str, ...] = ()  # its kinds of second factor: "passkey", "app"


def _people() -> QuerySet[Any]:
    """Each account with its devices' last sync and whether its deletion is pending, in the
    account's own row: subqueries that read the devices' and the deletions' indexes by user (an
    account has at most MAX_DEVICES devices, and at most one deletion pending), and its kinds of
    second factor."""
    last_sync = (
        Device.objects.filter(user_id=OuterRef("pk"))
        .values("user_id")
        .annotate(latest=Max("last_used"))
        .values("latest")
    )
    pending = AccountDeletion.objects.filter(
        user_id=OuterRef("pk"), status=AccountDeletion.Status.PENDING
    )
    awaiting = AwaitingConfirmation.objects.filter(user_id=OuterRef("pk"))
    return get_user_model().objects.annotate(
        last_sync=Subquery(last_sync),
        being_deleted=Exists(pending),
        awaiting=Exists(awaiting),
        last_active=F("activity__seen"),
        suspended=F("activity__suspended"),
        **factor_annotations(),
    )


def _person(user: Any, confirmed: set[Any]) -> Person:
    return Person(
        pk=user.pk,
        username=user.get_username(),
        date_joined=user.date_joined,
        last_login=user.last_login,
        last_sync=user.last_sync,
        last_active=user.last_active,
        suspended=user.suspended,
        is_active=user.is_active,
        is_staff=user.is_staff,
        is_superuser=user.is_superuser,
        being_deleted=user.being_deleted,
        email=user.email,
        email_confirmed=user.pk in confirmed,
        awaiting=user.awaiting,
        factors=factor_kinds(user),
    )


@dataclass(frozen=True)
class People:
    page: Page  # of Person
    accounts: Rows


def people_page(*, number: Any) -> People:
    """A page of PEOPLE_PER_PAGE accounts by username (its unique index), in one query and the
    count's (EstimatedCountPaginator: no count of a million rows, nor past its cap); a page
    number that is not one gives the first page, one past the end the last."""
    # Counted without the subqueries, which a count of 10,000 rows would run for each.
    users = get_user_model().objects.order_by("username")
    paginator = EstimatedCountPaginator(users, PEOPLE_PER_PAGE)
    page = paginator.get_page(number)
    first = (page.number - 1) * PEOPLE_PER_PAGE
    listed = list(_people().order_by("username")[first : first + PEOPLE_PER_PAGE])
    confirmed = confirmed_among(listed)
    page.object_list = [_person(user, confirmed) for user in listed]
    counted = paginator.count
    return People(page, Rows(counted, exact=counted <= EstimatedCountPaginator.COUNT_CAP))


def person_get(*, user_id: Any) -> Person:
    """NotFound when no account has that id."""
    user = _people().filter(pk=user_id).first()
    if user is None:
        raise NotFound()
    return _person(user, confirmed_among([user]))
