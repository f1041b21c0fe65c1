"""gpodder.net's sanitising of the feed URLs its apps send, before the service's own rules.

Pure functions: surrounding whitespace goes, `feed://`, `itpc://` and `itms://` are read as
`http://`, and a URL without a scheme is read as `http://` (docs/gpodder-api.md, "Subscriptions:
the advanced API").
"""

import re
from urllib.parse import urlsplit

from subscriptions import feeds

_PODCAST_SCHEMES = re.compile(r"^(?:feed|itpc|itms)://", re.IGNORECASE)
_HAS_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")
# A scheme and its colon, without the "//" (`https:/x`, `mailto:x`); not a host and its port.
_BROKEN_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:(?![0-9])")
_SCHEME_NAMES = {"http", "https", "feed", "itpc", "itms"}


def sanitized(sent: str) -> str | None:
    """The URL to use for `sent`, or None when it cannot be used (another scheme, a scheme
    without "//", no host or a scheme's name for one, too long, whitespace or control
    characters inside)."""
    url = _PODCAST_SCHEMES.sub("http://", sent.strip())
    if not _HAS_SCHEME.match(url):
        if _BROKEN_SCHEME.match(url):
            return None
        url = f"http://{url}"
    try:
        feeds.check_feed_url(url)
    except feeds.InvalidFeedUrl:
        return None
    if (urlsplit(url).hostname or "").lower() in _SCHEME_NAMES:
        return None  # `feed://https://x`: a scheme where the host should be
    return url
