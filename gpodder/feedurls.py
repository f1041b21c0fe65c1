"""gpodder.net's sanitising of the feed URLs its apps send, before the service's own rules.

Pure functions: surrounding whitespace goes, `feed://`, `itpc://` and `itms://` are read as
`http://`, and a URL without a scheme is read as `http://` (docs/gpodder.md, "Subscriptions").
"""

import re

from subscriptions import feeds

_PODCAST_SCHEMES = re.compile(r"^(?:feed|itpc|itms)://", re.IGNORECASE)
_HAS_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")


def sanitized(sent: str) -> str | None:
    """The URL to use for `sent`, or None when it cannot be used (another scheme, no host, too
    long, whitespace or control characters inside)."""
    url = _PODCAST_SCHEMES.sub("http://", sent.strip())
    if not _HAS_SCHEME.match(url):
        url = f"http://{url}"
    try:
        feeds.check_feed_url(url)
    except feeds.InvalidFeedUrl:
        return None
    return url
