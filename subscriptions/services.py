"""Writes to subscriptions: adding many at once and changing one (docs/api.md: "POST
/v1/subscriptions", "PATCH /v1/subscriptions/{guid}", "Guid history").

Both go through a _Workspace: it loads every subscription the request names (by any guid or feed
URL it ever had), applies the rules in memory and writes the result back with bulk statements,
so the number of queries is the same for 1 entry as for 500. Writes for one user are serialised
by locking the user's row (subscriptions.locks); the database's unique constraints settle
anything else.
"""

import uuid
from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection, models, transaction

from core.db import sql
from core.exceptions import Gone, InvalidInput, NotFound
from subscriptions import feeds, selectors, signals
from subscriptions.locks import lock_user_writes
from subscriptions.models import Subscription, SubscriptionFeed, SubscriptionGuid


@dataclass(frozen=True)
class AddEntry:
    """One entry of an add request, as sent: `guid` is None when the entry has none."""

    feed_url: str
    guid: Any = None


@dataclass(frozen=True)
class AddFailure:
    feed_url: str
    message: str


@dataclass(frozen=True)
class AddResult:
    success: list[Subscription]
    failure: list[AddFailure]


@dataclass(frozen=True)
class _ValidEntry:
    url: str
    digest: str
    sent_guid: uuid.UUID | None
    computed_guid: uuid.UUID


# Every field of a new subscription but its id, its user and what the database computes.
_CREATED_FIELDS = [
    field.name
    for field in Subscription._meta.concrete_fields
    if field.name not in ("id", "user") and not getattr(field, "generated", False)
]


class _Workspace:
    """The user's subscriptions one request touches, changed in memory and written at once."""

    def __init__(
        self, user: Any, *, guids: Iterable[uuid.UUID], digests: Iterable[str], now: datetime
    ):
        self.user = user
        self.now = now
        self._created: list[Subscription] = []
        self._dirty: dict[int, tuple[Subscription, set[str]]] = {}
        self._merged_into: dict[int, Subscription] = {}
        self._merged_saved: list[Subscription] = []
        self._new_guid_rows: list[tuple[Subscription, uuid.UUID]] = []
        self._replaced_guids: set[uuid.UUID] = set()
        self._new_feed_rows: list[tuple[Subscription, str, str]] = []  # and the URL, its digest
        # Subscriptions whose feed URL changed: their feed is checked in the background.
        self.moved: list[Subscription] = []
        self.by_guid, self.by_digest = selectors.subscriptions_reached(
            user=user, guids=set(guids), digests=set(digests)
        )

    # --- changes -----------------------------------------------------------------------------

    def create(self, entry: _ValidEntry, guid: uuid.UUID) -> Subscription:
        sub = Subscription(
            user_id=self.user.pk,
            guid=guid,
            feed_url=entry.url,
            is_subscribed=True,
            subscription_changed=self.now,
            created=self.now,
        )
        self._created.append(sub)
        self._add_guid(sub, guid)
        self._add_feed(sub, entry.url, entry.digest)
        return sub

    def resubscribe(self, sub: Subscription) -> None:
        self._set(sub, is_subscribed=True, deleted=None, subscription_changed=self.now)

    def set_subscribed(self, sub: Subscription, value: bool) -> None:
        if sub.is_subscribed != value:
            self._set(sub, is_subscribed=value, subscription_changed=self.now)

    def change_guid(self, sub: Subscription, guid: uuid.UUID) -> None:
        """Give `sub` a guid the user has never used."""
        self._replaced_guids.add(sub.guid)
        self._set(sub, guid=guid, guid_changed=self.now)
        self._add_guid(sub, guid)

    def move_feed(self, sub: Subscription, url: str, digest: str) -> None:
        """Point `sub` at a new feed URL.

        A URL that another subscription has or ever had reaches that subscription (docs/api.md,
        "Guid history"), so both are one feed: that one is merged into `sub`. Taking the URL from
        the other's history instead would leave its guid at a URL it no longer reaches, and sending
        the same entries again would merge them then: merging at once is what makes a resend change
        nothing.
        """
        owner = self.by_digest.get(digest)
        if owner is None:
            self._add_feed(sub, url, digest)
        elif owner is not sub:
            self.merge(owner, into=sub)
        if sub.feed_url != url:
            self._set(sub, feed_url=url, subscription_changed=self.now)
            self.moved.append(sub)

    def merge(self, source: Subscription, *, into: Subscription, take_state: bool = False) -> None:
        """Make `source` part of `into`: every guid and URL it had now reaches `into`.

        `into` keeps its own subscription state unless `take_state`, when it takes the state of
        `source`, the subscription the client acted on. Either way it has changed now, so a
        deletion requested before the merge does not delete what the merge brought in.
        """
        if into is source:
            return
        self._replaced_guids.add(source.guid)
        for guid, owner in self.by_guid.items():
            if owner is source:
                self.by_guid[guid] = into
        for digest, owner in self.by_digest.items():
            if owner is source:
                self.by_digest[digest] = into
        state = (
            {"is_subscribed": source.is_subscribed, "deleted": source.deleted} if take_state else {}
        )
        self._set(into, guid_changed=self.now, subscription_changed=self.now, **state)
        self._dirty.pop(id(source), None)
        self._merged_into[id(source)] = into
        if source.pk is None:
            self._created.remove(source)
        else:
            self._merged_saved.append(source)

    def final(self, sub: Subscription) -> Subscription:
        """The subscription `sub` ended up as, following merges."""
        while id(sub) in self._merged_into:
            sub = self._merged_into[id(sub)]
        return sub

    # --- writing -----------------------------------------------------------------------------

    def flush(self) -> None:
        created_ids = {id(sub) for sub in self._created}
        # Rows changed in the same fields are written together; a group whose new values are
        # all the same (a batch of re-subscribes) is one plain UPDATE, far cheaper than the
        # CASE expressions of bulk_update.
        groups: dict[frozenset[str], list[Subscription]] = defaultdict(list)
        for key, (sub, changed) in self._dirty.items():
            if key not in created_ids:
                groups[frozenset(changed)].append(sub)
        self._insert_created()

        if self._merged_saved:
            ids = [sub.pk for sub in self._merged_saved]
            target = models.Case(
                *[
                    models.When(subscription_id=s.pk, then=self.final(s).pk)
                    for s in self._merged_saved
                ],
                output_field=models.BigIntegerField(),
            )
            SubscriptionGuid.objects.filter(subscription_id__in=ids).update(subscription_id=target)
            SubscriptionFeed.objects.filter(subscription_id__in=ids).update(subscription_id=target)
            Subscription.objects.filter(pk__in=ids).delete()

        for fields, subs in groups.items():
            values = {field: getattr(subs[0], field) for field in fields}
            if all(getattr(sub, f) == v for sub in subs for f, v in values.items()):
                Subscription.objects.filter(pk__in=[sub.pk for sub in subs]).update(**values)
            else:
                Subscription.objects.bulk_update(subs, sorted(fields))
        sql.insert(
            SubscriptionGuid,
            {
                "subscription": [self.final(sub).pk for sub, _ in self._new_guid_rows],
                "guid": [guid for _, guid in self._new_guid_rows],
            },
            same={"user": self.user.pk, "assigned": self.now},
        )
        sql.insert(
            SubscriptionFeed,
            {
                "subscription": [self.final(sub).pk for sub, _, _ in self._new_feed_rows],
                "url": [url for _, url, _ in self._new_feed_rows],
                "key_digest": [digest for _, _, digest in self._new_feed_rows],
            },
            same={"user": self.user.pk, "assigned": self.now},
        )
        if self._replaced_guids:
            SubscriptionGuid.objects.filter(user=self.user, guid__in=self._replaced_guids).update(
                replaced=self.now
            )

    def _insert_created(self) -> None:
        """Insert the new subscriptions as they are now (a later entry may have changed one)."""
        columns = {name: [getattr(sub, name) for sub in self._created] for name in _CREATED_FIELDS}
        rows = sql.insert(
            Subscription, columns, same={"user": self.user.pk}, returning=["guid", "id"]
        )
        ids = dict(rows)
        if len(ids) != len(self._created):  # guids are unique per user, so never
            raise RuntimeError("the new subscriptions' guids did not map one to one to rows")
        for sub in self._created:
            sub.pk = ids[sub.guid]
            sub._state.adding = False
            sub._state.db = connection.alias

    def _set(self, sub: Subscription, **values: Any) -> None:
        for field, value in values.items():
            setattr(sub, field, value)
        self._dirty.setdefault(id(sub), (sub, set()))[1].update(values)

    def _add_guid(self, sub: Subscription, guid: uuid.UUID) -> None:
        self.by_guid[guid] = sub
        self._new_guid_rows.append((sub, guid))

    def _add_feed(self, sub: Subscription, url: str, digest: str) -> None:
        self.by_digest[digest] = sub
        self._new_feed_rows.append((sub, url, digest))


def _validate_entry(entry: AddEntry) -> _ValidEntry:
    feeds.check_feed_url(entry.feed_url)
    sent_guid = None
    if entry.guid is not None:
        sent_guid = feeds.parse_guid(entry.guid)
        if sent_guid is None:
            raise feeds.InvalidFeedUrl("Invalid guid: not a UUID")
    return _ValidEntry(
        url=entry.feed_url,
        digest=feeds.feed_key_digest(entry.feed_url),
        sent_guid=sent_guid,
        computed_guid=feeds.computed_guid(entry.feed_url),
    )


def _add_one(ws: _Workspace, entry: _ValidEntry) -> Subscription:
    """Find, change or create the subscription one entry names (docs/api.md, "POST
    /v1/subscriptions")."""
    if entry.sent_guid is not None:
        # A sent guid is authoritative: it decides which subscription this is.
        sub = ws.by_guid.get(entry.sent_guid)
        if sub is not None:
            # A URL new to it means the feed moved. One of its own earlier URLs means the client
            # has not heard of a move yet: that must not undo it.
            if ws.by_digest.get(entry.digest) is not sub:
                ws.move_feed(sub, entry.url, entry.digest)
        else:
            sub = ws.by_digest.get(entry.digest)
            if sub is None:
                return ws.create(entry, entry.sent_guid)
            ws.change_guid(sub, entry.sent_guid)
    else:
        # A computed guid only stands in for the URL: the URL is looked up first.
        sub = ws.by_digest.get(entry.digest)
        if sub is None:
            sub = ws.by_guid.get(entry.computed_guid)
            if sub is None:
                return ws.create(entry, entry.computed_guid)
            ws.move_feed(sub, entry.url, entry.digest)
    ws.resubscribe(sub)
    return sub


def subscription_add_many(*, user: Any, entries: Sequence[AddEntry]) -> AddResult:
    """Add or re-subscribe every valid entry; report each in success or failure, in order."""
    valid: list[_ValidEntry] = []
    failure: list[AddFailure] = []
    for entry in entries:
        try:
            valid.append(_validate_entry(entry))
        except feeds.InvalidFeedUrl as exc:
            failure.append(AddFailure(feed_url=entry.feed_url, message=str(exc)))
    if not valid:
        return AddResult(success=[], failure=failure)

    guids = {g for e in valid for g in (e.sent_guid, e.computed_guid) if g is not None}
    with transaction.atomic():
        now = lock_user_writes(user.pk)
        ws = _Workspace(user, guids=guids, digests={e.digest for e in valid}, now=now)
        added = [_add_one(ws, entry) for entry in valid]
        ws.flush()
        # A computed guid only stands in for the feed's own: learn that, and any move.
        computed = [sub for entry, sub in zip(valid, added, strict=True) if entry.sent_guid is None]
        _check_feeds_later(ws, [*computed, *ws.moved])
    return AddResult(success=[ws.final(sub) for sub in added], failure=failure)


def subscription_unsubscribe_many(*, user: Any, urls: Collection[str]) -> dict[str, Subscription]:
    """Unsubscribe the user's subscriptions that any of the valid feed `urls` reaches (by any URL
    they ever had), in one transaction whose queries do not grow with the URLs. Deleted
    subscriptions stay as they are, and a URL that reaches none changes nothing. Returns the
    subscriptions reached, by the digest of the URL's matching key."""
    digests = {feeds.feed_key_digest(url) for url in urls}
    if not digests:
        return {}
    with transaction.atomic():
        now = lock_user_writes(user.pk)
        ws = _Workspace(user, guids=[], digests=digests, now=now)
        for sub in {id(sub): sub for sub in ws.by_digest.values()}.values():
            if sub.deleted is None:
                ws.set_subscribed(sub, False)
        ws.flush()
    return dict(ws.by_digest)


def subscription_mark_deleted(sub: Subscription, now: datetime) -> None:
    """Mark the subscription deleted, with what belongs to it in other apps (in the caller's
    transaction, which holds the user's writes). Its guid and feed URL history stay, pointing at
    it, so every guid it had answers 410 and adding its feed again re-subscribes it."""
    sub.deleted = now
    sub.is_subscribed = False
    sub.subscription_changed = now
    sub.save(update_fields=["deleted", "is_subscribed", "subscription_changed"])
    signals.subscriptions_deleted.send(
        sender=Subscription, user_id=sub.user_id, subscription_ids=[sub.pk]
    )


@dataclass(frozen=True)
class SubscriptionUpdate:
    """What a PATCH asked to change; None for what it left alone."""

    new_feed_url: str | None = None
    new_guid: uuid.UUID | None = None
    is_subscribed: bool | None = None


def subscription_update(*, user: Any, guid: uuid.UUID, change: SubscriptionUpdate) -> Subscription:
    """Apply a PATCH to the subscription any of whose guids is `guid`; return the result.

    A `new_guid` the user already has on another subscription merges this one into it.
    """
    digest = bad_url = None
    if change.new_feed_url is not None:
        try:
            feeds.check_feed_url(change.new_feed_url)
            digest = feeds.feed_key_digest(change.new_feed_url)
        except feeds.InvalidFeedUrl as exc:
            bad_url = str(exc)  # told after "not found" and "deleted", which come first

    with transaction.atomic():
        now = lock_user_writes(user.pk)
        wanted = [guid] if change.new_guid is None else [guid, change.new_guid]
        ws = _Workspace(user, guids=wanted, digests=[digest] if digest else [], now=now)
        sub = ws.by_guid.get(guid)
        if sub is None:
            raise NotFound()
        if sub.deleted is not None:
            raise Gone()
        if bad_url is not None:
            raise InvalidInput(bad_url, errors={"new_feed_url": [bad_url]})

        owner = None
        if change.new_guid is not None:
            owner = ws.by_guid.get(change.new_guid)
            if change.new_guid == sub.guid:
                message = "new_guid is already the subscription's guid"
                raise InvalidInput(message, errors={"new_guid": [message]})
            if owner is sub:
                message = "new_guid is an earlier guid of this subscription: the history would loop"
                raise InvalidInput(message, errors={"new_guid": [message]})

        # The guid first: a merge it makes decides which subscription the rest applies to.
        if change.new_guid is not None:
            if owner is None:
                ws.change_guid(sub, change.new_guid)
            else:
                ws.merge(sub, into=owner, take_state=True)
                sub = owner
        if change.new_feed_url is not None and digest is not None:
            ws.move_feed(sub, change.new_feed_url, digest)
        if change.is_subscribed is not None:
            ws.set_subscribed(sub, change.is_subscribed)
        ws.flush()
        _check_feeds_later(ws, ws.moved)
    return ws.final(sub)


def _check_feeds_later(ws: _Workspace, subs: Iterable[Subscription]) -> None:
    """Ask for the feeds of `subs` to be checked (the feedchecks app, once this commits)."""
    signals.feed_check_wanted.send(
        sender=Subscription, user_id=ws.user.pk, urls=[ws.final(sub).feed_url for sub in subs]
    )


def _change_held_back(subs: Iterable[Subscription | None]) -> bool:
    """Whether an app that builds on subscriptions holds back a change to any of `subs`."""
    reached = [sub for sub in subs if sub is not None]
    answers = signals.change_held.send(sender=Subscription, subscriptions=reached)
    return any(held for _, held in answers)


def _liveliness(sub: Subscription) -> tuple[bool, bool]:
    return (sub.deleted is None, sub.is_subscribed)


def subscription_apply_feed_identity(
    *, user: Any, key_digest: str, guid: uuid.UUID | None, new_feed_url: str | None
) -> bool:
    """Apply what the feed at `key_digest` says about itself to the user's subscription there.

    Only a subscription whose current feed URL is that feed, and that is not deleted, changes.
    `guid` (the feed's podcast:guid) replaces its guid only when that guid was computed by the
    server from one of its URLs: a guid a client sent is authoritative (docs/api.md, "POST
    /v1/subscriptions"). `new_feed_url` (a permanent move) moves it, keeping the old URL in its
    history. When the guid or URL already reaches another of the user's subscriptions, the two
    become one with every guid and URL of both, and the state of the more alive of the two
    (subscribed over unsubscribed over deleted). Nothing changes while an app that builds on
    subscriptions holds the change (signals.change_held: the deletions app, while a deletion of
    either is pending). Returns whether anything changed.
    """
    new_digest = feeds.feed_key_digest(new_feed_url) if new_feed_url else None
    if new_digest == key_digest:
        new_feed_url = new_digest = None
    with transaction.atomic():
        now = lock_user_writes(user.pk)
        digests = [d for d in (key_digest, new_digest) if d is not None]
        ws = _Workspace(user, guids=[guid] if guid else [], digests=digests, now=now)
        sub = ws.by_digest.get(key_digest)
        if (
            sub is None
            or sub.deleted is not None
            or feeds.feed_key_digest(sub.feed_url) != key_digest
        ):
            return False
        if _change_held_back(
            [sub, ws.by_guid.get(guid) if guid else None, ws.by_digest.get(new_digest or "")]
        ):
            return False
        changed = False
        if guid is not None and guid != sub.guid and _guid_is_computed(sub):
            owner = ws.by_guid.get(guid)
            if owner is None:
                ws.change_guid(sub, guid)
                changed = True
            elif owner is not sub:
                ws.merge(sub, into=owner, take_state=_liveliness(sub) > _liveliness(owner))
                sub = owner
                changed = True
            # An earlier guid of this very subscription: taking it back would loop the history.
        # After a merge into a subscription at another URL, that URL is not the one that moved:
        # it stays.
        if (
            new_feed_url is not None
            and new_digest is not None
            and feeds.feed_key_digest(sub.feed_url) == key_digest
        ):
            other = ws.by_digest.get(new_digest)
            if other is not None and other is not sub:
                ws.merge(other, into=sub, take_state=_liveliness(other) > _liveliness(sub))
            ws.move_feed(sub, new_feed_url, new_digest)
            changed = True
        if changed:
            ws.flush()
    return changed


def _guid_is_computed(sub: Subscription) -> bool:
    """Whether the subscription's guid is the one the podcast namespace computes from one of its
    URLs: then the server made it up (or the client sent that same stand-in)."""
    urls = SubscriptionFeed.objects.filter(subscription=sub).values_list("url", flat=True)
    return any(feeds.computed_guid(url) == sub.guid for url in urls)
