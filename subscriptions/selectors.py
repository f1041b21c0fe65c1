"""Reads of subscriptions."""

import uuid
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import F, OuterRef, Q, QuerySet, Subquery, UUIDField
from django.db.models.expressions import BaseExpression
from django.db.models.functions import Coalesce

from config.exceptions import Gone, NotFound
from subscriptions.models import Subscription, SubscriptionGuid

# Written out because it is the hottest read: building and compiling the same query through
# the ORM took a fifth of a GET request's CPU time. The guid's (user, guid) index finds it.
_BY_GUID = (
    f"SELECT s.* FROM {Subscription._meta.db_table} s"
    f" JOIN {SubscriptionGuid._meta.db_table} g ON g.subscription_id = s.id"
    " WHERE g.user_id = %s AND g.guid = %s"
)


def subscription_by_guid(*, user: Any, guid: uuid.UUID, lock: bool = False) -> Subscription:
    """The user's subscription that has or had `guid`, in one query; `lock` locks its row.

    Another user's guid is not found, exactly like one that does not exist.
    """
    sql = _BY_GUID
    if lock and connection.features.has_select_for_update_of:
        sql += " FOR UPDATE OF s"
    param = SubscriptionGuid._meta.get_field("guid").get_db_prep_value(guid, connection)
    sub = next(iter(Subscription.objects.raw(sql, [user.pk, param])), None)
    if sub is None:
        raise NotFound()
    if sub.deleted is not None:
        raise Gone()
    return sub


class ListedSubscriptions:
    """The subscriptions a list shows, counted and sliced in SQL, like a queryset.

    A slice first picks its rows' ids, then looks up each one's listed guid: an annotation on
    the whole ordered query would be computed for every row an OFFSET skips as well.
    """

    def __init__(self, matching: QuerySet[Subscription], listed_guid: BaseExpression):
        self._matching = matching.order_by("id")
        self._listed_guid = listed_guid

    def count(self) -> int:
        return self._matching.count()

    def __getitem__(self, rows: slice) -> QuerySet[Subscription]:
        ids = self._matching.values("pk")[rows]
        return (
            Subscription.objects.filter(pk__in=ids)
            .annotate(listed_guid=self._listed_guid)
            .order_by("id")
        )


def subscription_list(*, user: Any, since: datetime | None) -> ListedSubscriptions:
    """The user's subscriptions as the list shows them (product.md section 9).

    Deleted and unsubscribed ones included; with `since`, only those changed after it. In
    creation order, which a change never moves, so a client walking the pages while it changes
    subscriptions skips none. Each carries `listed_guid`: the guid it had at `since`, or its
    first guid when there is no `since` or it did not exist yet.
    """
    history = SubscriptionGuid.objects.filter(subscription=OuterRef("pk"))
    first = Subquery(history.order_by("assigned", "id").values("guid")[:1])
    mine = Subscription.objects.filter(user=user)
    if since is None:
        return ListedSubscriptions(mine, first)
    # After a merge, several guids were current at `since`, one per subscription merged; the
    # one replaced since tells the client which of its subscriptions became which.
    current_at_since = (
        history.filter(assigned__lte=since)
        .filter(Q(replaced__isnull=True) | Q(replaced__gt=since))
        .order_by(F("replaced").asc(nulls_last=True), "assigned", "id")
        .values("guid")[:1]
    )
    return ListedSubscriptions(
        mine.filter(changed__gt=since),
        Coalesce(Subquery(current_at_since), first, output_field=UUIDField()),
    )


def subscription_current(*, user: Any) -> QuerySet[Subscription]:
    """The user's subscribed, not deleted subscriptions, in creation order (the OPML export)."""
    return Subscription.objects.filter(
        user=user, is_subscribed=True, deleted__isnull=True
    ).order_by("id")
