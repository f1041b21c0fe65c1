"""Reading a feed's identity from bytes: podcast:guid, itunes:new-feed-url, unsafe XML."""

import uuid

import pytest

from feedchecks import parsing
from feedchecks.parsing import UnsafeFeed, feed_identity
from tests.feedchecks.feedserver import BILLION_LAUGHS, GUID, rss


def test_guid_and_new_feed_url():
    got = feed_identity(rss(guid=GUID, new_feed_url="https://new.example/feed"))
    assert got.guid == uuid.UUID(GUID)
    assert got.new_feed_url == "https://new.example/feed"


def test_the_podcast_namespace_under_any_prefix():
    assert feed_identity(rss(guid=GUID.upper(), prefix="pi")).guid == uuid.UUID(GUID)


def test_nothing_declared():
    got = feed_identity(rss())
    assert got.guid is None
    assert got.new_feed_url is None


@pytest.mark.parametrize("value", ["not-a-uuid", "", "1234", "https://example.com/"])
def test_a_guid_that_is_not_a_uuid_is_ignored(value):
    assert feed_identity(rss(guid=value)).guid is None


@pytest.mark.parametrize("value", ["example.com/feed", "ftp://example.com/feed", "", "https://"])
def test_a_bad_new_feed_url_is_ignored(value):
    assert feed_identity(rss(new_feed_url=value)).new_feed_url is None


def test_a_guid_in_another_namespace_is_not_the_podcast_guid():
    doc = rss().replace(
        b"<title>A show</title>", f'<x:guid xmlns:x="urn:other">{GUID}</x:guid>'.encode()
    )
    assert feed_identity(doc).guid is None


def test_a_document_cut_short_is_still_read():
    doc = rss(guid=GUID)
    assert feed_identity(doc[: doc.index(b"<item>") + 10]).guid == uuid.UUID(GUID)


@pytest.mark.parametrize(
    "doc",
    [
        BILLION_LAUGHS,
        BILLION_LAUGHS.decode().encode("utf-16"),
        b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        b"<rss><channel><title>&x;</title></channel></rss>",
        b'<?xml version="1.0"?><!DOCTYPE rss SYSTEM "http://127.0.0.1/evil.dtd"><rss/>',
        # Not well-formed before the declaration: refused all the same.
        b"<rss><channel>&broken;<!DOCTYPE x [<!ENTITY a 'b'>]></channel></rss>",
    ],
    ids=["billion-laughs", "utf-16", "external-entity", "external-dtd", "ill-formed"],
)
def test_dtds_and_entities_are_refused(doc):
    with pytest.raises(UnsafeFeed):
        feed_identity(doc)


def test_an_ill_formed_feed_without_declarations_is_read():
    doc = rss(guid=GUID).replace(b"A show", b"A & B show")
    assert feed_identity(doc).guid == uuid.UUID(GUID)


def test_a_document_of_more_than_max_tags_is_refused_unread(monkeypatch):
    doc = rss(guid=GUID)
    monkeypatch.setattr(parsing, "MAX_TAGS", doc.count(b"<"))
    assert feed_identity(doc).guid == uuid.UUID(GUID)
    with pytest.raises(parsing.FeedTooComplex, match=r"too complex to read: \d+ tags, more than"):
        feed_identity(doc.replace(b"</rss>", b"<x/></rss>"))
