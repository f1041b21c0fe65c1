"""Unit and property tests of subscriptions/feeds.py against docs/api.md, "Identifiers,
URLs and timestamps"."""

import re
import uuid

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from subscriptions.feeds import (
    PODCAST_NAMESPACE,
    InvalidFeedUrl,
    check_feed_url,
    computed_guid,
    feed_key,
    feed_key_digest,
    parse_guid,
)

PODNEWS_GUID = uuid.UUID("9b024349-ccf0-5f69-a609-6b82873eab3c")
DEFAULT_PORT = {"http": 80, "https": 443}


def is_valid(url: str) -> bool:
    try:
        check_feed_url(url)
    except InvalidFeedUrl:
        return False
    return True


def rejection(url: str) -> str:
    with pytest.raises(InvalidFeedUrl) as info:
        check_feed_url(url)
    return str(info.value)


# --- check_feed_url ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "https://podnews.net/rss",
        "http://podnews.net/rss",
        "HTTPS://PODNEWS.NET/rss",
        "https://podnews.net",
        "https://podnews.net:8443/rss?format=xml&x=1",
        "https://user:secret@example.com/feed",
        "https://[2001:db8::1]/feed",
        "https://bücher.example/feed",
        "https://example.com/podcasts/café/épisodes.xml",
        "https://example.com/%E2%9C%93/rss",
    ],
)
def test_acceptable_urls_pass(url):
    check_feed_url(url)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("podnews.net/rss", "No protocol present"),
        ("", "No protocol present"),
        ("//podnews.net/rss", "No protocol present"),
        ("ftp://podnews.net/rss", "Protocol must be http or https"),
        ("feed://podnews.net/rss", "Protocol must be http or https"),
        ("file:///etc/passwd", "Protocol must be http or https"),
        ("https://", "No host present"),
        ("https:///rss", "No host present"),
        ("https:// podnews.net/rss", "Feed URL contains whitespace, control or invalid characters"),
        ("https://podnews.net/r ss", "Feed URL contains whitespace, control or invalid characters"),
        (" https://podnews.net/rss", "Feed URL contains whitespace, control or invalid characters"),
        (
            "https://podnews.net/rss\n",
            "Feed URL contains whitespace, control or invalid characters",
        ),
        (
            "https://podnews.net/\trss",
            "Feed URL contains whitespace, control or invalid characters",
        ),
        (
            "https://podnews.net/\x00rss",
            "Feed URL contains whitespace, control or invalid characters",
        ),
        (
            "https://podnews.net/\x7frss",
            "Feed URL contains whitespace, control or invalid characters",
        ),
        (
            "https://podnews.net/\ud800",
            "Feed URL contains whitespace, control or invalid characters",
        ),
        (
            "https://podnews.net/\u00a0",
            "Feed URL contains whitespace, control or invalid characters",
        ),
    ],
)
def test_bad_urls_are_rejected_with_the_rule_they_break(url, message):
    assert rejection(url) == message


def test_length_limit_is_2048_characters():
    prefix = "https://example.com/"
    at_limit = prefix + "a" * (2048 - len(prefix))
    assert len(at_limit) == 2048
    check_feed_url(at_limit)
    assert rejection(at_limit + "a") == "Feed URL is longer than the 2048-character limit"


def test_length_limit_counts_characters_not_bytes():
    prefix = "https://example.com/"
    multibyte = prefix + "é" * (2048 - len(prefix))
    assert len(multibyte.encode()) > 2048
    check_feed_url(multibyte)


@pytest.mark.parametrize(
    "url", ["https://example.com:99999/rss", "https://example.com:abc/rss", "http://[::1/rss"]
)
def test_unparseable_urls_are_invalid_feed_urls_not_crashes(url):
    # Any rejection will do, as long as it is the domain error and not a ValueError escaping.
    assert rejection(url)


@given(st.text(max_size=300))
def test_check_feed_url_only_ever_raises_invalid_feed_url(text):
    for url in (text, "https://" + text, "http://example.com/" + text):
        try:
            check_feed_url(url)
        except InvalidFeedUrl as exc:
            message = str(exc)
        else:
            message = "accepted"
        assert message


@given(st.text(min_size=1, max_size=50))
def test_any_whitespace_or_control_character_is_rejected(text):
    bad = [ch for ch in text if ch.isspace() or (ord(ch) < 32 or 0x7F <= ord(ch) < 0xA0)]
    assume(bad)
    assert not is_valid("https://example.com/" + text)


# --- feed_key: matching ignores exactly the differences docs/api.md names -----------------------

label = st.from_regex(r"\A[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?\Z")
hosts = st.lists(label, min_size=1, max_size=3).map(lambda labels: ".".join([*labels, "com"]))
segment = st.text(
    alphabet=st.sampled_from("abcXYZ019-._~%+,;=@éü✓"), min_size=1, max_size=8
).filter(lambda s: s not in (".", ".."))
paths = st.lists(segment, max_size=4).map(lambda segs: "".join("/" + s for s in segs))
queries = st.one_of(
    st.just(""),
    st.text(alphabet=st.sampled_from("abcXYZ019=&-_/"), min_size=1, max_size=10).map(
        lambda q: "?" + q
    ),
)
ports = st.one_of(st.none(), st.integers(min_value=1, max_value=65535))


@st.composite
def url_parts(draw):
    """A valid feed URL as parts, with no trailing slash and no default port written."""
    scheme = draw(st.sampled_from(["http", "https"]))
    port = draw(ports)
    if port == DEFAULT_PORT[scheme]:
        port = None
    return {
        "scheme": scheme,
        "host": draw(hosts),
        "port": port,
        "path": draw(paths),
        "query": draw(queries),
    }


def build(parts, *, scheme=None, host=None, port=None, path=None, slash=False):
    scheme = scheme or parts["scheme"]
    port = parts["port"] if port is None else port
    netloc = (host or parts["host"]) + (f":{port}" if port else "")
    path = parts["path"] if path is None else path
    url = f"{scheme}://{netloc}{path}{'/' if slash else ''}{parts['query']}"
    assert is_valid(url), url
    return url


def random_case(draw, text):
    flags = draw(st.lists(st.booleans(), min_size=len(text), max_size=len(text)))
    return "".join(ch.upper() if up else ch.lower() for ch, up in zip(text, flags, strict=True))


valid_urls = st.builds(build, url_parts())


@given(valid_urls)
def test_feed_key_is_idempotent_on_structured_urls(url):
    assert feed_key(feed_key(url)) == feed_key(url)


@given(st.sampled_from(["http://", "https://", "HTTPS://", "hTtP://"]), st.text(max_size=80))
@example("https://", "Example.COM:443/rss/")
@example("https://", "user:Pass@Example.com:443//")
@example("http://", "[2001:DB8::1]:80/feed/")
def test_feed_key_is_idempotent_on_any_valid_url(prefix, rest):
    url = prefix + rest
    assume(is_valid(url))
    key = feed_key(url)
    assert is_valid(key)
    assert feed_key(key) == key


@given(st.data(), url_parts())
def test_urls_differing_only_in_named_ways_share_a_key(data, parts):
    base = build(parts)
    default = DEFAULT_PORT[parts["scheme"]]
    variant = build(
        parts,
        scheme=random_case(data.draw, parts["scheme"]),
        host=random_case(data.draw, parts["host"]),
        port=data.draw(st.sampled_from([parts["port"] or default, parts["port"] or None])),
        slash=data.draw(st.booleans()),
    )
    assert feed_key(variant) == feed_key(base)
    assert feed_key_digest(variant) == feed_key_digest(base)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("https://podnews.net/rss", "HTTPS://podnews.net/rss"),
        ("https://podnews.net/rss", "https://PodNews.NET/rss"),
        ("https://podnews.net/rss", "https://podnews.net:443/rss"),
        ("http://podnews.net/rss", "http://podnews.net:80/rss"),
        ("https://podnews.net/rss", "https://podnews.net/rss/"),
        ("https://podnews.net", "https://podnews.net/"),
        ("https://podnews.net/rss?a=1", "https://podnews.net/rss/?a=1"),
        ("https://bücher.example/feed", "https://BÜCHER.example/feed"),
        ("https://[2001:db8::1]/feed", "https://[2001:DB8::1]:443/feed/"),
    ],
)
def test_named_differences_match(a, b):
    assert feed_key(a) == feed_key(b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("https://podnews.net/rss", "https://podnews.net/RSS"),
        ("https://podnews.net/rss", "https://podnews.net/rss2"),
        ("https://podnews.net/rss", "https://podnews.net/rss?a=1"),
        ("https://podnews.net/rss?a=1", "https://podnews.net/rss?a=2"),
        ("https://podnews.net/rss?a=1", "https://podnews.net/rss?A=1"),
        ("https://podnews.net/rss", "http://podnews.net/rss"),
        ("https://podnews.net/rss", "https://podnews.net:80/rss"),
        ("http://podnews.net/rss", "http://podnews.net:443/rss"),
        ("https://podnews.net/rss", "https://podnews.net:8443/rss"),
        ("https://podnews.net/rss", "https://www.podnews.net/rss"),
        ("https://podnews.net/a/b", "https://podnews.net/a//b"),
        ("https://podnews.net/~me", "https://podnews.net/%7Eme"),
        ("https://podnews.net/rss", "https://me@podnews.net/rss"),
        ("https://Me@podnews.net/rss", "https://me@podnews.net/rss"),
    ],
)
def test_other_differences_do_not_match(a, b):
    assert feed_key(a) != feed_key(b)
    assert feed_key_digest(a) != feed_key_digest(b)


def _mutations(parts):
    """URLs that differ from build(parts) in some way docs/api.md does not name."""
    scheme, port = parts["scheme"], parts["port"]
    other_scheme = "https" if scheme == "http" else "http"
    yield build(parts, path=parts["path"] + "/x")
    yield build(parts, path=parts["path"] + "x") if parts["path"] else build(parts, path="/x")
    yield build({**parts, "query": parts["query"] + "&z" if parts["query"] else "?z"})
    yield build(parts, host="www." + parts["host"])
    non_default = 8000 if port != 8000 else 8001
    yield build(parts, port=non_default)
    # The other scheme's default port is not this scheme's default.
    yield build(parts, port=DEFAULT_PORT[other_scheme]) if port is None else build(parts)
    if port is None:
        yield build(parts, scheme=other_scheme)
    letters = [i for i, ch in enumerate(parts["path"]) if ch.lower() != ch.upper()]
    if letters:
        i = letters[0]
        flipped = parts["path"][i].swapcase()
        yield build(parts, path=parts["path"][:i] + flipped + parts["path"][i + 1 :])


@given(url_parts())
def test_any_other_difference_gives_another_key(parts):
    base = build(parts)
    for other in _mutations(parts):
        if other == base:
            continue
        assert feed_key(other) != feed_key(base), (base, other)


def test_feed_key_digest_is_a_sha256_hex_digest():
    assert re.fullmatch(r"[0-9a-f]{64}", feed_key_digest("https://podnews.net/rss"))


def test_feed_key_digest_fits_multibyte_urls_at_the_length_limit():
    url = "https://example.com/" + "✓" * 2028
    assert is_valid(url)
    assert len(feed_key_digest(url)) == 64


# --- computed_guid: the podcast namespace's guid ----------------------------------------------


def test_computed_guid_matches_the_podcast_namespace_vector():
    assert computed_guid("https://podnews.net/rss") == PODNEWS_GUID


@pytest.mark.parametrize(
    "url",
    [
        "http://podnews.net/rss",
        "https://podnews.net/rss/",
        "https://podnews.net/rss///",
        "HTTPS://podnews.net/rss",
    ],
)
def test_computed_guid_ignores_scheme_and_trailing_slashes(url):
    assert computed_guid(url) == PODNEWS_GUID


@pytest.mark.parametrize(
    "url",
    ["https://PODNEWS.net/rss", "https://podnews.net:443/rss", "https://podnews.net/rss?a=1"],
)
def test_computed_guid_is_taken_over_the_url_as_sent(url):
    # Only the scheme and trailing slashes are removed: this is what makes the guid the same on
    # every server, so the server's own matching rules must not leak into it.
    assert computed_guid(url) != PODNEWS_GUID


@given(valid_urls)
def test_computed_guid_is_a_uuid5_independent_of_scheme_and_trailing_slash(url):
    guid = computed_guid(url)
    assert guid.version == 5
    assert guid.variant == uuid.RFC_4122
    rest = url.split("://", 1)[1]
    assert computed_guid("http://" + rest) == guid
    assert computed_guid("https://" + rest + "/") == guid


@given(st.text(max_size=300))
def test_computed_guid_is_pythons_uuid5_of_the_url_without_scheme_and_trailing_slashes(text):
    for url in (text, "https://" + text, "http://" + text + "/"):
        name = re.sub(r"^[a-zA-Z]+://", "", url).rstrip("/")
        assert computed_guid(url) == uuid.uuid5(PODCAST_NAMESPACE, name)


# --- parse_guid -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spelling",
    [
        "9b024349-ccf0-5f69-a609-6b82873eab3c",
        "9B024349-CCF0-5F69-A609-6B82873EAB3C",
        "{9b024349-ccf0-5f69-a609-6b82873eab3c}",
        "{9B024349-CCF0-5F69-A609-6B82873EAB3C}",
        "urn:uuid:9b024349-ccf0-5f69-a609-6b82873eab3c",
        "9b024349ccf05f69a6096b82873eab3c",
    ],
)
def test_parse_guid_accepts_every_uuid_spelling(spelling):
    assert parse_guid(spelling) == PODNEWS_GUID


@pytest.mark.parametrize(
    "value",
    [
        "",
        "not-a-uuid",
        "9b024349-ccf0-5f69-a609-6b82873eab3",
        "9b024349-ccf0-5f69-a609-6b82873eab3cc",
        "9b024349-ccf0-5f69-a609-6b82873eab3g",
    ],
)
def test_parse_guid_rejects_strings_that_are_not_uuids(value):
    assert parse_guid(value) is None


@pytest.mark.parametrize(
    "value",
    [None, 0, 123, 1.5, True, [], {}, ["9b024349-ccf0-5f69-a609-6b82873eab3c"], b"\x9b" * 16],
)
def test_parse_guid_rejects_non_strings(value):
    assert parse_guid(value) is None


@given(st.uuids())
def test_parse_guid_round_trips_every_spelling(guid):
    for spelling in (str(guid), str(guid).upper(), f"{{{guid}}}", guid.urn, guid.hex):
        assert parse_guid(spelling) == guid


@given(st.text(max_size=60))
def test_parse_guid_accepts_exactly_what_uuid_parses(text):
    try:
        expected = uuid.UUID(text)
    except ValueError:
        expected = None
    assert parse_guid(text) == expected


@pytest.mark.parametrize("code", range(128))
def test_each_ascii_character_is_rejected_exactly_when_whitespace_or_control(code):
    ch = chr(code)
    bad = ch.isspace() or code < 32 or code == 127

    assert is_valid(f"https://example.com/a{ch}b") is not bad
