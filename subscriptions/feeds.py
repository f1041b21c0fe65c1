"""Feed URLs and guids: validation, the key two URLs of one feed share, and computed guids.

Pure functions with no database access, so the rules of docs/api.md, "Identifiers, URLs and
timestamps", live in one place and can be property-tested on their own.
"""

import hashlib
import re
import unicodedata
import uuid
from urllib.parse import urlsplit

# The podcast namespace's guid: UUIDv5 over the feed URL without scheme and trailing slashes.
PODCAST_NAMESPACE = uuid.UUID("ead4c236-bf58-58c6-a2c6-a6b28d128cb6")
MAX_FEED_URL_LENGTH = 2048

_HAS_PROTOCOL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")
_SCHEME_PREFIX = re.compile(r"^[a-zA-Z]+://")
_DEFAULT_PORTS = {"http": 80, "https": 443}
# What _bad_character finds among ASCII characters, found by one search instead of one call per
# character: most URLs are ASCII (bench/README.md, "subscriptions.feeds.check_feed_url").
_ASCII_BAD = re.compile(r"[\x00-\x20\x7f]")


class InvalidFeedUrl(ValueError):
    """The feed URL breaks a rule; the message says which, for the client to read."""


def _bad_character(ch: str) -> bool:
    # U+FFFE and U+FFFF are the characters besides controls and surrogates that XML 1.0 refuses:
    # a URL holding one would make the OPML export that names it ill-formed.
    return ch.isspace() or unicodedata.category(ch) in ("Cc", "Cs") or ch in "\ufffe\uffff"


def check_feed_url(url: str) -> None:
    """Raise InvalidFeedUrl unless `url` is an acceptable feed URL."""
    if len(url) > MAX_FEED_URL_LENGTH:
        raise InvalidFeedUrl(f"Feed URL is longer than the {MAX_FEED_URL_LENGTH}-character limit")
    if _ASCII_BAD.search(url) if url.isascii() else any(map(_bad_character, url)):
        raise InvalidFeedUrl("Feed URL contains whitespace, control or invalid characters")
    if not _HAS_PROTOCOL.match(url):
        raise InvalidFeedUrl("No protocol present")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise InvalidFeedUrl(f"Feed URL is not valid: {exc}") from exc
    if parts.scheme.lower() not in _DEFAULT_PORTS:
        raise InvalidFeedUrl("Protocol must be http or https")
    if not parts.hostname:
        raise InvalidFeedUrl("No host present")
    if port == 0:
        raise InvalidFeedUrl("Feed URL is not valid: port 0")


def feed_key(url: str) -> str:
    """The matching key of a valid feed URL.

    Two URLs that differ only in the case of the scheme or host, a default port, or trailing
    slashes of the path share a key; any other difference gives another key.
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None and parts.port != _DEFAULT_PORTS.get(scheme):
        netloc += f":{parts.port}"
    userinfo, at, _ = parts.netloc.rpartition("@")
    if at:
        netloc = f"{userinfo}@{netloc}"
    key = f"{scheme}://{netloc}{parts.path.rstrip('/')}"
    if parts.query:
        key += f"?{parts.query}"
    if parts.fragment:
        key += f"#{parts.fragment}"
    return key


def feed_key_digest(url: str) -> str:
    """What the database indexes in place of the matching key."""
    return hashlib.sha256(feed_key(url).encode()).hexdigest()


def url_key_digest(url: str) -> str:
    """feed_key_digest for any URL an app or a feed names, an episode's enclosure too: the same
    spelling variants share it; a string that is not a URL at all (an app may name an episode
    by its guid) has its own."""
    try:
        key = feed_key(url) if urlsplit(url).hostname else f"other:{url}"
    except ValueError:  # a port or an IPv6 host that cannot be read
        key = f"other:{url}"
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


# uuid.uuid5, from a hash already fed the namespace: making a new SHA-1 hash with OpenSSL 3 is
# most of uuid5's time (bench/README.md, "subscriptions.feeds.computed_guid").
_NAMESPACE_SHA1 = hashlib.sha1(PODCAST_NAMESPACE.bytes, usedforsecurity=False)


def computed_guid(url: str) -> uuid.UUID:
    """The guid the podcast namespace gives a feed URL: UUIDv5 (RFC 9562)."""
    sha1 = _NAMESPACE_SHA1.copy()
    sha1.update(_SCHEME_PREFIX.sub("", url).rstrip("/").encode("utf-8"))
    return uuid.UUID(bytes=sha1.digest()[:16], version=5)


def parse_guid(value: object) -> uuid.UUID | None:
    """A guid in any spelling uuid.UUID accepts, or None when `value` is not one."""
    if not isinstance(value, str):
        return None
    try:
        return uuid.UUID(value)
    except ValueError:
        return None
