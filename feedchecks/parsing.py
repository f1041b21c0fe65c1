"""Reading a feed's identity (`podcast:guid`, `itunes:new-feed-url`), title, website and artwork
from bytes we fetched.

The bytes are first refused if they declare a DTD or entities (billion laughs, external
entities), with defusedxml; then feedparser reads them from memory, so it never fetches anything
itself.
"""

import calendar
import hashlib
import html
import io
import re
import unicodedata
import uuid
import xml.sax
from dataclasses import dataclass
from datetime import UTC, datetime

from defusedxml import DefusedXmlException
from defusedxml.sax import make_parser

from core.text import is_xml_text, xml_text
from subscriptions import feeds

# The podcast namespace's URI, as feeds write it.
PODCAST_NAMESPACES = frozenset(
    {
        "https://podcastindex.org/namespace/1.0",
        "http://podcastindex.org/namespace/1.0",
        "https://github.com/Podcastindex-org/podcast-namespace/blob/main/docs/1.0.md",
    }
)
# A web page, by how it starts: its doctype would otherwise be refused as a DTD (UnsafeFeed), and
# the person told the feed declares entities when the address serves a page.
_WEB_PAGE = re.compile(rb"\A(?:\xef\xbb\xbf)?\s*(?:<!doctype\s+html\b|<html\b)", re.IGNORECASE)
# In any encoding a parser could be told to use: ASCII-compatible ones and UTF-16.
_DECLARATION = re.compile(rb"<!\s*(doctype|entity)", re.IGNORECASE)
_DECLARATION_UTF16 = [
    marker.encode(codec)
    for marker in ("<!DOCTYPE", "<!doctype", "<!ENTITY", "<!entity")
    for codec in ("utf-16-le", "utf-16-be")
]


class UnsafeFeed(ValueError):
    """The document declares a DTD or entities: it is not read."""


class UnreadableFeed(ValueError):
    """The feed parser gave up on the document (it raised instead of reading what it could)."""


class FeedTooComplex(UnreadableFeed):
    """Reading the document would cost more than a check may spend (feedchecks.reader)."""


class NotAFeed(UnreadableFeed):
    """The document is no feed: a web page, an error page served with 200, an empty body."""


# More tags than this and a document is not read. feedparser's time grows with the tags it
# reads, and a document of nothing but tags holds 1.7 million in 5 MiB (a minute of CPU); a
# podcast feed of 10,000 short items, 4.6 MB, holds 180,000 (bench/HISTORY.md, "Feed parsing").
MAX_TAGS = 250_000


MAX_TITLE_LENGTH = 500
# A longer guid is no guid: the item is known by its enclosure URL instead.
MAX_GUID_LENGTH = 500
# The longest duration taken from a feed: a week (anything longer is a mistake).
MAX_DURATION = 7 * 24 * 3600
# No "<" inside: on a title of many "<" and no ">", "<[^>]*>" took quadratic time.
_TAG = re.compile(r"<[^<>]*>")
_DURATION = re.compile(r"(?:(?:(\d{1,3}):)?(\d{1,4}):)?(\d{1,7})(?:\.\d*)?")


@dataclass(frozen=True)
class FeedItem:
    """One episode of a feed: what the catalogue keeps ("" or None for what it lacks)."""

    item_key: str  # the same item from check to check: FeedEpisode.item_key
    guid: str
    title: str
    url: str
    url_key: str
    link: str
    published: datetime | None
    duration: int | None
    image_url: str


@dataclass(frozen=True)
class FeedIdentity:
    """What a feed says about itself: its podcast:guid (a UUID) and its itunes:new-feed-url; and
    what the pages show of it: its title, website and artwork ("" for what it lacks)."""

    guid: uuid.UUID | None
    new_feed_url: str | None
    title: str = ""
    link: str = ""
    image_url: str = ""
    episodes: tuple[FeedItem, ...] = ()


def refuse_declarations(data: bytes) -> None:
    """Raise UnsafeFeed when `data` declares a DTD or an entity, anywhere.

    A well-formed document is read by defusedxml, which stops at any such declaration whatever
    the encoding. Feeds are often not well-formed, and feedparser reads those too: then any
    declaration at all is refused by looking for it in the bytes.
    """
    parser = make_parser()
    parser.setFeature(xml.sax.handler.feature_external_ges, False)
    parser.forbid_dtd = True
    parser.setContentHandler(xml.sax.handler.ContentHandler())
    try:
        parser.parse(io.BytesIO(data))
    except DefusedXmlException as exc:
        raise UnsafeFeed(f"The feed declares a DTD or entities ({exc}): not read") from exc
    except (xml.sax.SAXException, ValueError, LookupError):
        if _DECLARATION.search(data) or any(marker in data for marker in _DECLARATION_UTF16):
            raise UnsafeFeed("The feed declares a DTD or entities: not read") from None


def feed_identity(data: bytes, *, episodes_kept: int = 0) -> FeedIdentity:
    """The identity a feed declares at channel level; None for what it lacks or gets wrong.
    With its newest `episodes_kept` episodes (feed_items).

    Raises UnsafeFeed for a document with a DTD or entities, FeedTooComplex for one of more than
    MAX_TAGS tags, NotAFeed for one that is no feed at all.
    """
    # Counted before anything reads the document: the count takes milliseconds where reading
    # what it refuses takes a minute. Any "<" counts, in text and CDATA too: even so the densest
    # real feed the fetch's cap lets through stays under the bound.
    # feedparser is loaded here: a web process runs this in a child of its own
    # (feedchecks.reader), and never needs it itself (bench/HISTORY.md, "Footprint").
    import feedparser

    tags = data.count(b"<")
    if tags > MAX_TAGS:
        raise FeedTooComplex(
            f"The feed is too complex to read: {tags:,} tags, more than {MAX_TAGS:,}"
        )
    if _WEB_PAGE.match(data):
        raise NotAFeed("The document is a web page, not a feed")
    refuse_declarations(data)
    # A stream, never a string: feedparser fetches a string that looks like a URL and opens one
    # that names a file.
    try:
        parsed = feedparser.parse(
            io.BytesIO(data), resolve_relative_uris=False, sanitize_html=False
        )
    except Exception as exc:  # whatever a hostile document makes it raise (a lone surrogate)
        raise UnreadableFeed(f"The feed could not be read ({type(exc).__name__})") from exc
    channel = parsed.get("feed", {})
    namespaces = parsed.get("namespaces", {})
    # feedparser names the format it recognised (rss20, atom10, ...), and reads what it can of
    # anything else: a web page gives no format, no title and no items. Stored as a success, it
    # would hide that the address serves no feed (and could give the podcast the page's name).
    if not parsed.get("version") and not channel.get("title") and not parsed.get("entries"):
        raise NotAFeed("The document is not a feed (no RSS or Atom found)")

    guid = None
    for prefix, uri in namespaces.items():
        if uri.rstrip("/") in PODCAST_NAMESPACES:
            value = channel.get(f"{prefix}_guid")
            guid = _uuid(value)
            if guid is not None:
                break

    new_url = channel.get("itunes_new-feed-url")
    if isinstance(new_url, str):
        new_url = new_url.strip()
        try:
            feeds.check_feed_url(new_url)
        except feeds.InvalidFeedUrl:
            new_url = None
    else:
        new_url = None
    image = channel.get("image")
    return FeedIdentity(
        guid=guid,
        new_feed_url=new_url,
        title=plain_text(channel.get("title")),
        link=web_url(channel.get("link")),
        # feedparser reads itunes:image, an RSS <image> and an Atom <logo> into `image`.
        image_url=web_url(
            image.get("href") or image.get("url") if isinstance(image, dict) else None
        )
        or web_url(channel.get("logo"))
        or web_url(channel.get("icon")),
        episodes=feed_items(parsed.get("entries", []), kept=episodes_kept),
    )


def feed_items(entries: list[dict], *, kept: int) -> tuple[FeedItem, ...]:
    """The newest `kept` of a feed's items (by publication date, then as the feed lists them),
    each once: an item named twice (a duplicated guid, or a guid-less enclosure twice) is the
    first the feed lists. An item with neither a guid nor an enclosure URL cannot be matched
    to anything an app sends, and is left out."""
    if kept <= 0:  # a feed of 10,000 items is not read item by item to keep none of them
        return ()
    items: dict[str, FeedItem] = {}
    for entry in entries:
        item = _feed_item(entry)
        if item is not None and item.item_key not in items:
            items[item.item_key] = item
    listed = list(items.values())
    dated = [item for item in listed if item.published is not None]
    dated.sort(key=lambda item: item.published, reverse=True)  # type: ignore[arg-type,return-value]
    undated = [item for item in listed if item.published is None]
    return tuple([*dated, *undated][:kept])


def _feed_item(entry: dict) -> FeedItem | None:
    guid = entry.get("id")
    guid = guid.strip() if isinstance(guid, str) else ""
    if (
        len(guid) > MAX_GUID_LENGTH
        or not is_xml_text(guid)
        or any(unicodedata.category(ch) in ("Cc", "Cs") for ch in guid)
    ):
        guid = ""
    url = _enclosure(entry)
    url_key = feeds.url_key_digest(url) if url else ""
    if not guid and not url:
        return None
    key = "guid:" + guid if guid else "url:" + url_key
    image = entry.get("image")
    return FeedItem(
        item_key=hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest(),
        guid=guid,
        title=plain_text(entry.get("title")),
        url=url,
        url_key=url_key,
        link=web_url(entry.get("link")),
        published=_published(entry.get("published_parsed") or entry.get("updated_parsed")),
        duration=_duration(entry.get("itunes_duration")),
        image_url=web_url(image.get("href") if isinstance(image, dict) else None),
    )


def _enclosure(entry: dict) -> str:
    """The item's first enclosure with a usable URL (feedparser lists RSS enclosures and Atom
    links with rel="enclosure" alike)."""
    for enclosure in entry.get("enclosures") or []:
        if isinstance(enclosure, dict) and (url := web_url(enclosure.get("href"))):
            return url
    return ""


def _published(value: object) -> datetime | None:
    """feedparser's date (a UTC struct_time), as an aware datetime; None for one out of range."""
    try:
        return datetime.fromtimestamp(calendar.timegm(value), UTC)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError, OSError):
        return None


def _duration(value: object) -> int | None:
    """itunes:duration in seconds: "1:02:03", "62:03" or "3723" (fractions dropped)."""
    if not isinstance(value, str):
        return None
    found = _DURATION.fullmatch(value.strip())
    if found is None:
        return None
    hours, minutes, seconds = (int(part or 0) for part in found.groups())
    total = hours * 3600 + minutes * 60 + seconds
    return total if total <= MAX_DURATION else None


def plain_text(value: object) -> str:
    """A title as plain text: markup and entities resolved, control characters and the others
    XML 1.0 refuses dropped (an entity may spell U+FFFF), whitespace collapsed, at most
    MAX_TITLE_LENGTH characters. The pages escape it again."""
    if not isinstance(value, str):
        return ""
    text = xml_text(html.unescape(_TAG.sub(" ", value)))
    text = "".join(ch for ch in text if unicodedata.category(ch) not in ("Cc", "Cs", "Cf"))
    return " ".join(text.split())[:MAX_TITLE_LENGTH].rstrip()


def web_url(value: object) -> str:
    """`value` if it is an absolute http(s) URL a browser may load, else "" (a feed's
    `javascript:` or relative URL is never shown as a link or an image)."""
    if not isinstance(value, str):
        return ""
    value = value.strip()
    try:
        feeds.check_feed_url(value)
    except feeds.InvalidFeedUrl:
        return ""
    return value


def _uuid(value: object) -> uuid.UUID | None:
    if not isinstance(value, str):
        return None
    return feeds.parse_guid(value.strip())
