"""Reading a feed in a child process held to a CPU bound: the same answer as in-process, and
hostile shapes stopped within the bound with a readable error (bench/HISTORY.md, "Feed parsing")."""

import resource
import time

import pytest

from feedchecks import parsing, reader
from tests.feedchecks.feedserver import BILLION_LAUGHS, GUID, rss

MiB = 1024 * 1024
HEAD = b'<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>t</title>'


def repeated(unit: bytes, size: int = 5 * MiB, tail: bytes = b"</channel></rss>") -> bytes:
    return HEAD + unit * ((size - len(HEAD) - len(tail)) // len(unit)) + tail


def children_cpu() -> float:
    """CPU seconds of this process's children that have ended."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def episodes_feed() -> bytes:
    items = "".join(
        f"<item><title>Episode {n} &amp; more</title><guid>guid-{n}</guid>"
        f'<enclosure url="https://media.example.com/{n}.mp3" type="audio/mpeg" length="1"/>'
        f"<link>https://example.com/{n}</link><itunes:duration>1:02:0{n}</itunes:duration>"
        f"<pubDate>Mon, 0{n + 1} Jan 2024 06:00:00 GMT</pubDate></item>"
        for n in range(5)
    )
    return rss(guid=GUID, new_feed_url="https://new.example/feed").replace(
        b"<item><title>Episode 1</title></item>", items.encode()
    )


def test_a_feed_is_read_as_in_this_process():
    feed = episodes_feed()
    in_process = parsing.feed_identity(feed, episodes_kept=3)
    assert len(in_process.episodes) == 3
    assert in_process.episodes[0].published is not None

    assert reader.read_feed(feed, episodes_kept=3) == in_process


@pytest.mark.parametrize(
    ("doc", "refusal"),
    [(BILLION_LAUGHS, parsing.UnsafeFeed), (b"<" * (parsing.MAX_TAGS + 1), parsing.FeedTooComplex)],
    ids=["unsafe", "too-many-tags"],
)
def test_a_refusal_comes_back_as_it_was_raised(doc, refusal):
    with pytest.raises(refusal) as refused:
        reader.read_feed(doc, episodes_kept=0)
    assert type(refused.value) is refusal


SHAPES = {
    # Refused by their count of tags before anything reads them.
    "unclosed-tags": lambda: repeated(b"<a>", tail=b""),
    "deep-nesting": lambda: HEAD + b"<a>" * (MiB // 3) + b"</a>" * (MiB // 3),
    "many-entries": lambda: repeated(b"<item><guid>x</guid></item>"),
    "many-tiny-tags": lambda: repeated(b"<b/>"),
    # Stopped by the CPU bound: few tags, each costly (feedparser looks up each attribute of an
    # element among all of them), or as many tags as the count allows.
    "many-attributes": lambda: (
        HEAD
        + b"<item><enclosure "
        + b"".join(b'a%d="1" ' % n for n in range(40_000))
        + b"/></item></channel></rss>"
    ),
    "unclosed-tags-under-the-count": lambda: HEAD + b"<item>" * (parsing.MAX_TAGS - 10),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_hostile_shape_ends_within_the_bound_with_an_error(monkeypatch, shape):
    """Each took from 16 s to far more than a minute of CPU in-process (bench/HISTORY.md, "Feed
    parsing"); the bound is lowered to 1 s here to keep the test short."""
    monkeypatch.setattr(reader, "MAX_CPU_SECONDS", 1)
    doc = SHAPES[shape]()
    cpu_before, started = children_cpu(), time.monotonic()

    with pytest.raises(parsing.FeedTooComplex, match=r"^The feed is too complex to read: "):
        reader.read_feed(doc, episodes_kept=1000)

    cpu = children_cpu() - cpu_before
    # RLIMIT_CPU counts whole seconds, the interpreter's start included, and the kernel checks
    # it at its ticks: past the bound, SIGXCPU; one second later at the most, SIGKILL.
    assert cpu < reader.MAX_CPU_SECONDS + 2, cpu
    # By the clock, well before the reader's own bound (MAX_SECONDS): the CPU figure above is
    # the bound's check, and a child's CPU second can take several by the clock on a machine
    # whose cores the rest of make test keeps busy (10.6 s was seen).
    assert time.monotonic() - started < reader.MAX_SECONDS / 2


def test_a_reader_still_running_by_the_clock_is_stopped(monkeypatch):
    monkeypatch.setattr(reader, "MAX_SECONDS", 0.5)
    monkeypatch.setattr(reader, "_CHILD", "import time; time.sleep(30)")
    started = time.monotonic()
    with pytest.raises(parsing.FeedTooComplex, match=r"still unread after 0\.5 s"):
        reader.read_feed(rss(), episodes_kept=0)
    assert time.monotonic() - started < 5


def test_a_reader_that_fails_is_an_unexpected_error(monkeypatch):
    monkeypatch.setattr(reader, "_CHILD", "import sys; sys.exit('a bug')")
    with pytest.raises(RuntimeError, match="exited with 1: a bug"):
        reader.read_feed(rss(), episodes_kept=0)
