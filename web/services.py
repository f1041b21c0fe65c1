"""What the pages do that no API does as such: an OPML file's import, told feed by feed."""

from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from core.exceptions import InvalidInput
from subscriptions import feeds, opml
from subscriptions.selectors import subscription_feeds_reached
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
