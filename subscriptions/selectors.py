"""Reads of subscriptions."""

import uuid
from collections.abc import Collection
from datetime import datetime
from typing import Any, NamedTuple

from django.db import connection
from django.db.models import CharField, QuerySet, Value

from core.db import sql
from core.exceptions import Gone, NotFound
from subscriptions import signals
from subscriptions.models import Subscription, SubscriptionFeed, SubscriptionGuid

SUBSCRIPTIONS = Subscription._meta.db_table
GUIDS = SubscriptionGuid._meta.db_table
_FIELDS = tuple(Subscription._meta.concrete_fields)
_FIELD = {field.name: field for field in _FIELDS}
_ATTNAMES = [field.attname for field in _FIELDS]
_GUID = SubscriptionGuid._meta.get_field("guid")
_ASSIGNED = SubscriptionGuid._meta.get_field("assigned")

_SUBSCRIPTION_COLUMNS = sql.Columns(*_FIELDS)
_SUBSCRIPTION_NAMES = ", ".join(f"s.{field.column}" for field in _FIELDS)
# The guid's (user, guid) index finds it.
_BY_GUID = (
    f"SELECT {_SUBSCRIPTION_NAMES} FROM {SUBSCRIPTIONS} s"
    f" JOIN {GUIDS} g ON g.subscription_id = s.id"
    " WHERE g.user_id = %s AND g.guid = %s"
)


def subscription_by_guid(*, user: Any, guid: uuid.UUID, lock: bool = False) -> Subscription:
    """The user's subscription that has or had `guid`, in one query; `lock` locks its row.

    Another user's guid is not found, exactly like one that does not exist.
    """
    query = _BY_GUID
    if lock and connection.features.has_select_for_update_of:
        query += " FOR UPDATE OF s"
    rows = sql.fetch(query, [user.pk, sql.param(_GUID, guid)], _SUBSCRIPTION_COLUMNS, prepare=True)
    if not rows:
        raise NotFound()
    sub = Subscription.from_db(connection.alias, _ATTNAMES, rows[0])
    if sub.deleted is not None:
        raise Gone()
    return sub


_REACHED_COLUMNS = sql.Columns(*_FIELDS, _GUID, None)


def subscriptions_reached(
    *, user: Any, guids: Collection[uuid.UUID], digests: Collection[str]
) -> tuple[dict[uuid.UUID, Subscription], dict[str, Subscription]]:
    """The user's subscriptions that have or had one of `guids`, by that guid, and those that
    have or had a feed URL whose matching key's digest is one of `digests`, by that digest; in
    one query, whose text does not grow with the lists. A subscription both reach is one
    instance.
    """
    by_guid_from, guid_params = sql.by_key(
        SubscriptionGuid, "guid", list(guids), where="user_id = %s", params=[user.pk], alias="g"
    )
    by_digest_from, digest_params = sql.by_key(
        SubscriptionFeed,
        "key_digest",
        list(digests),
        where="user_id = %s",
        params=[user.pk],
        alias="f",
    )
    query = (
        f"SELECT {_SUBSCRIPTION_NAMES}, g.guid, NULL FROM {by_guid_from}"
        f" JOIN {SUBSCRIPTIONS} s ON s.id = g.subscription_id"
        f" UNION ALL SELECT {_SUBSCRIPTION_NAMES}, NULL, f.key_digest FROM {by_digest_from}"
        f" JOIN {SUBSCRIPTIONS} s ON s.id = f.subscription_id"
    )
    rows = sql.fetch(query, [*guid_params, *digest_params], _REACHED_COLUMNS)
    loaded: dict[int, Subscription] = {}
    by_guid: dict[uuid.UUID, Subscription] = {}
    by_digest: dict[str, Subscription] = {}
    for *values, guid, digest in rows:
        sub = loaded.get(values[0])
        if sub is None:
            sub = loaded[values[0]] = Subscription.from_db(connection.alias, _ATTNAMES, values)
        if guid is None:
            by_digest[digest] = sub
        else:
            by_guid[guid] = sub
    return by_guid, by_digest


class FeedReached(NamedTuple):
    """A feed URL history row (SubscriptionFeed), with its subscription's current feed URL and
    whether the user is subscribed to it now (subscribed, not deleted)."""

    feed_id: int
    subscription_id: int
    feed_url: str
    current: bool


class ShownSubscription(NamedTuple):
    """A subscription as GET one and the list show it, under `shown_guid`: the guid it was asked
    by, or the one the list gives it. Both guids are canonical strings: they are only shown."""

    feed_url: str
    guid: str
    is_subscribed: bool
    subscription_changed: datetime
    guid_changed: datetime | None
    deleted: datetime | None
    shown_guid: str


_SHOWN_NAMES = ShownSubscription._fields[:-1]  # the subscription's own columns
_SHOWN_FIELDS = (
    *(sql.AsText(_FIELD[name]) if name == "guid" else _FIELD[name] for name in _SHOWN_NAMES),
    sql.AsText(_GUID),
)
_SHOWN_COLUMNS = sql.Columns(*_SHOWN_FIELDS)


def _shown_names(table: str) -> str:
    return ", ".join(
        sql.AsText.sql(f"{table}.{name}") if name == "guid" else f"{table}.{name}"
        for name in _SHOWN_NAMES
    )


# The guid's (user, guid) index finds it.
_SHOWN_BY_GUID = (
    f"SELECT {_shown_names('s')}, {sql.AsText.sql('g.guid')} FROM {SUBSCRIPTIONS} s"
    f" JOIN {GUIDS} g ON g.subscription_id = s.id"
    " WHERE g.user_id = %s AND g.guid = %s"
)


def subscription_shown(*, user: Any, guid: uuid.UUID) -> ShownSubscription:
    """The user's subscription that has or had `guid`, shown under it, in one query.

    What GET one reads: subscription_by_guid's, without making a model instance."""
    rows = sql.fetch(
        _SHOWN_BY_GUID, [user.pk, sql.param(_GUID, guid)], _SHOWN_COLUMNS, prepare=True
    )
    if not rows:
        raise NotFound()
    sub = ShownSubscription(*rows[0])
    if sub.deleted is not None:
        raise Gone()
    return sub


_LISTED_COLUMNS = sql.Columns(None, *_SHOWN_FIELDS)  # the total first
_FIRST_GUID = (
    f"(SELECT g.guid FROM {GUIDS} g WHERE g.subscription_id = page.id"
    " ORDER BY g.assigned, g.id LIMIT 1)"
)
# After a merge, several guids were current at `since`, one per subscription merged; the one
# replaced since tells the client which of its subscriptions became which.
_GUID_AT_SINCE = (
    f"(SELECT g.guid FROM {GUIDS} g WHERE g.subscription_id = page.id AND g.assigned <= %s"
    " AND (g.replaced IS NULL OR g.replaced > %s)"
    " ORDER BY g.replaced IS NULL, g.replaced, g.assigned, g.id LIMIT 1)"
)
_LISTED_NAMES = ", ".join(_SHOWN_NAMES)


def subscription_list(
    *, user: Any, since: datetime | None, offset: int, limit: int
) -> tuple[int, list[ShownSubscription]]:
    """How many subscriptions the list has, and `limit` of them from `offset` (docs/api.md,
    "GET /v1/subscriptions"), in one query.

    Deleted and unsubscribed ones included; with `since`, only those changed after it. In
    creation order, which a change never moves, so a client walking the pages while it changes
    subscriptions skips none. Each is listed under the guid it had at `since`, or its first
    guid when there is no `since` or it did not exist yet.

    The rows an OFFSET skips are counted in the (user, id, changed) index alone, to find the
    page's first id; the page is then read from there, and the listed guids are looked up for
    its rows only. A join of the page's ids to their rows would let the planner hash the whole
    table instead, which it estimates cheaper on a table of a few thousand rows.
    """
    where, params = "user_id = %s", [user.pk]
    listed_guid, guid_params = _FIRST_GUID, []
    if since is not None:
        at = sql.param(_ASSIGNED, since)
        where, params = where + " AND changed > %s", [user.pk, at]
        listed_guid, guid_params = f"COALESCE({_GUID_AT_SINCE}, {_FIRST_GUID})", [at, at]
    # A subscription gains a second guid only by a guid change or a merge, which both set
    # guid_changed: without one, its one guid is the listed one, and no history is read.
    listed_guid = sql.AsText.sql(
        f"CASE WHEN page.guid_changed IS NULL THEN page.guid ELSE {listed_guid} END"
    )
    page_where, page_params = where, params
    if offset:  # the first page starts at the first row: a query the less to plan
        first_id = f"SELECT id FROM {SUBSCRIPTIONS} WHERE {where} ORDER BY id LIMIT 1 OFFSET %s"
        # An offset past any row finds none; one past the database's integers is an error.
        page_where += f" AND id >= ({first_id})"
        page_params = [*params, *params, min(offset, 2**62)]
    query = (
        f"SELECT counted.total, {_shown_names('page')}, {listed_guid}"
        f" FROM (SELECT COUNT(*) AS total FROM {SUBSCRIPTIONS} WHERE {where}) counted"
        f" LEFT JOIN (SELECT id, {_LISTED_NAMES} FROM {SUBSCRIPTIONS}"
        f" WHERE {page_where} ORDER BY id LIMIT %s) page ON TRUE"
        " ORDER BY page.id"
    )
    rows = sql.fetch(query, [*guid_params, *params, *page_params, limit], _LISTED_COLUMNS)
    total = rows[0][0]
    return total, [ShownSubscription(*row[1:]) for row in rows if row[1] is not None]


def subscription_current(*, user: Any) -> QuerySet[Subscription]:
    """The user's subscribed, not deleted subscriptions, in creation order (the OPML export)."""
    return Subscription.objects.filter(
        user=user, is_subscribed=True, deleted__isnull=True
    ).order_by("id")


def subscription_feeds_reached(*, user: Any, digests: Collection[str]) -> dict[str, FeedReached]:
    """For each digest of a URL's matching key that reaches one of the user's subscriptions: the
    URL history row that holds it, and that subscription's id and current feed URL."""
    if not digests:
        return {}
    rows = SubscriptionFeed.objects.filter(user=user, key_digest__in=list(digests)).values_list(
        "key_digest",
        "id",
        "subscription_id",
        "subscription__feed_url",
        "subscription__is_subscribed",
        "subscription__deleted",
    )
    return {
        digest: FeedReached(feed_id, subscription_id, feed_url, subscribed and deleted is None)
        for digest, feed_id, subscription_id, feed_url, subscribed, deleted in rows
    }


def subscription_feed_digests(*, subscription_ids: Collection[int]) -> QuerySet[Any]:
    """The matching-key digests of every feed URL the subscriptions have had (a subquery)."""
    return SubscriptionFeed.objects.filter(subscription_id__in=list(subscription_ids)).values(
        "key_digest"
    )


def feed_digests_alike(*, user: Any, digest: str) -> QuerySet[Any]:
    """The matching-key digests of every feed URL had by the user's subscription that `digest`
    reaches, `digest` among them; none when it reaches none (a subquery)."""
    reached = SubscriptionFeed.objects.filter(user=user, key_digest=digest)
    return SubscriptionFeed.objects.filter(
        subscription_id__in=reached.values("subscription_id")
    ).values("key_digest")


def subscriptions_titled(subscriptions: QuerySet[Subscription]) -> QuerySet[Subscription]:
    """`subscriptions` with `feed_title`: their feed's title where an app above knows it
    (signals.feed_titles_wanted), else ""."""
    answers = signals.feed_titles_wanted.send(sender=Subscription, subscriptions=subscriptions)
    for _, titled in answers:
        if isinstance(titled, QuerySet):
            return titled
    return subscriptions.annotate(feed_title=Value("", output_field=CharField()))
