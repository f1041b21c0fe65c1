"""What the pages do that no API does as such: an OPML file's import, told feed by feed; an app
password named after the app it is for; a podcast added by the address a person pastes; an
account registered, held off until its address is confirmed where there is mail."""

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import count
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction

from accounts import addresses
from accounts.models import AppPassword
from accounts.selectors import app_passwords_of
from accounts.services import app_password_create
from core.exceptions import InvalidInput
from deletions.models import Deletion
from feedchecks.fetcher import host_refused, parse_networks
from feedchecks.selectors import subscriptions_with_feed_title
from gpodder.feedurls import sanitized
from mail.services import confirmation_send
from subscriptions import feeds, opml
from subscriptions.locks import lock_user_writes
from subscriptions.models import Subscription
from subscriptions.selectors import subscription_feeds_reached, subscriptions_reached
from subscriptions.services import AddEntry, AddFailure, subscription_add_many


@dataclass
class ImportSummary:
    """What an import did with each feed of the file: added (new, or subscribed again),
    already there (subscribed before, or named twice in the file), or failed and why."""

    added: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    failed: list[AddFailure] = field(default_factory=list)


def opml_import(*, user: Any, document: bytes) -> ImportSummary:
    """Subscribe the user to every feed of the OPML document, as the API's import does.

    Raises InvalidInput for a document that is not OPML, or names more than MAX_OPML_ENTRIES
    feeds (nothing is added then).
    """
    found = opml.opml_parse(document)
    limit = settings.MAX_OPML_ENTRIES
    if len(found) > limit:
        raise InvalidInput(
            f"The file names {len(found)} feeds: at most {limit} are read (MAX_OPML_ENTRIES)"
        )
    summary = ImportSummary()
    entries: list[AddEntry] = []
    digests: dict[str, str] = {}
    seen: set[str] = set()
    for feed in found:
        try:
            feeds.check_feed_url(feed.url)
        except feeds.InvalidFeedUrl as exc:
            summary.failed.append(AddFailure(feed_url=feed.url, message=str(exc)))
            continue
        digest = feeds.feed_key_digest(feed.url)
        if digest in seen or feed.url in digests:
            summary.already.append(feed.url)
            continue
        seen.add(digest)
        digests[feed.url] = digest
        entries.append(AddEntry(feed_url=feed.url))
    before = subscription_feeds_reached(user=user, digests=list(digests.values()))
    result = subscription_add_many(user=user, entries=entries)
    summary.failed.extend(result.failure)
    failed = {failure.feed_url for failure in result.failure}
    for entry in entries:
        if entry.feed_url in failed:
            continue
        reached = before.get(digests[entry.feed_url])
        (summary.already if reached and reached.current else summary.added).append(entry.feed_url)
    return summary


def app_password_for_app(*, user: Any, app: str) -> tuple[AppPassword, str]:
    """A new app password of the user named after `app`: "Kasts", else "Kasts (2)", "Kasts
    (3)", ..., the first name the account has none by; with the password itself, shown once.
    InvalidInput when the account has MAX_APP_PASSWORDS already (or took the name meanwhile)."""
    taken = {made.name for made in app_passwords_of(user=user)}
    names = (app if number == 1 else f"{app} ({number})" for number in count(1))
    return app_password_create(user=user, name=next(name for name in names if name not in taken))


# What a podcast's subscription was before it was added by its address (PodcastAdded.before).
NEW, SUBSCRIBED, UNSUBSCRIBED, BEING_DELETED, DELETED = (
    "new",
    "subscribed",
    "unsubscribed",
    "being deleted",
    "deleted",
)
# A scheme and its colon, not a host and its port (gpodder.feedurls reads them so).
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):(?![0-9])")
_SCHEMES_READ = frozenset({"http", "https", "feed", "itpc", "itms"})


@dataclass(frozen=True)
class PodcastAdded:
    """What adding a podcast by its address did.

    `before` is what the subscription was: NEW (none), SUBSCRIBED (then nothing changed),
    UNSUBSCRIBED, BEING_DELETED (the add stops the pending deletion) or DELETED. `used` is the
    address as sanitised; `title` the feed's, "" while no feed check has read it; `unfetchable`
    says the feed checks will not fetch it (its host is a private or local address).
    """

    subscription: Subscription
    before: str
    used: str
    title: str
    unfetchable: bool


def podcast_add(*, user: Any, sent: str) -> PodcastAdded:
    """Subscribe the user to the feed at `sent`, an address as a person pastes it.

    It is sanitised as the gpodder API sanitises (blanks around it dropped; `feed://`, `itpc://`,
    `itms://` and no scheme read as `http://`), then added as one entry of POST /v1/subscriptions
    (any valid http(s) URL is kept, and its feed check queued). A feed the user is subscribed to
    already, by any spelling of its URL or by the guid it computes, is left as it is, as the
    gpodder API leaves it; an unsubscribed or deleted one is subscribed again.

    InvalidInput, saying in words why, for an address that cannot be a feed's.
    """
    used = sanitized(sent)
    if used is None:
        reason = _refusal(sent)
        raise InvalidInput(reason, errors={"url": [reason]})
    digest = feeds.feed_key_digest(used)
    guid = feeds.computed_guid(used)
    with transaction.atomic():
        lock_user_writes(user.pk)  # what is read next stays true until the add is done
        by_guid, by_digest = subscriptions_reached(user=user, guids=[guid], digests=[digest])
        found = by_digest.get(digest) or by_guid.get(guid)
        before = _state(found)
        sub = found
        if before != SUBSCRIBED:
            added = subscription_add_many(user=user, entries=[AddEntry(feed_url=used)])
            (sub,) = added.success  # the address passed the rules the add checks
    assert sub is not None
    titled = subscriptions_with_feed_title(Subscription.objects.filter(pk=sub.pk)).first()
    host = urlsplit(used).hostname or ""
    return PodcastAdded(
        subscription=sub,
        before=before,
        used=used,
        title=getattr(titled, "feed_title", ""),
        unfetchable=host_refused(host, parse_networks(settings.FEED_FETCH_ALLOWED_NETWORKS)),
    )


def _state(sub: Subscription | None) -> str:
    if sub is None:
        return NEW
    if sub.deleted is not None:
        return DELETED
    if Deletion.objects.filter(subscription=sub, status=Deletion.Status.PENDING).exists():
        return BEING_DELETED
    return SUBSCRIBED if sub.is_subscribed else UNSUBSCRIBED


def _refusal(sent: str) -> str:
    """Why `sent` cannot be a feed's address, in words: what sanitized() found wrong with it."""
    text = sent.strip()
    example = "https://example.com/feed.xml"
    scheme = _SCHEME.match(text)
    if scheme is None:
        url = f"http://{text}"
    elif scheme[1].lower() not in _SCHEMES_READ:
        return f"“{scheme[1]}:” addresses cannot be feeds: a feed's address starts with https://."
    elif not text[scheme.end() :].startswith("//"):
        return f"“{scheme[1]}:” must be followed by “//”, as in {example}."
    else:
        url = f"http://{text[scheme.end() + 2 :]}"
    limit = feeds.MAX_FEED_URL_LENGTH
    if len(text) > limit:
        # Not its length: a browser stops a paste at the field's maxlength, one past the limit.
        return f"This address is longer than {limit:,} characters, the most a feed's address has."
    if len(url) > limit:
        return (
            f"Read as {url[:20]}…, this address is {len(url):,} characters long: "
            f"a feed's address has at most {limit:,}."
        )
    try:
        feeds.check_feed_url(url)
    except feeds.InvalidFeedUrl as exc:
        problem = str(exc)
        if "whitespace" in problem:
            return (
                "This address holds spaces, line breaks or other characters no address has: "
                "paste the feed's address alone."
            )
        if problem == "No host present":
            return f"This address names no server: a feed's address looks like {example}."
        return f"This address cannot be read ({problem.removeprefix('Feed URL is not valid: ')})."
    return "This address has a scheme where its server should be: paste the feed's own address."


def account_register(*, make: Callable[[], Any], address: str) -> Any:
    """The account `make` makes (open registration, or an invitation's). Where there is mail
    (EMAIL_URL), it is off until its person opens the link mailed to `address`, which the same
    transaction queues; without, it is on at once, with no address."""
    with transaction.atomic():
        user = make()
        if settings.MAIL_ENABLED:
            addresses.registration_awaits(user=user, address=address)
            confirmation_send(user=user, address=address)
    return user
