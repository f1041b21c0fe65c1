"""What reading a feed costs a check, hostile shapes included: each shape read as a check reads
it (feedchecks.reader), its CPU seconds against the bound (bench/README.md, "Feed parsing")."""

import resource
import time
from collections.abc import Callable

MiB = 1024 * 1024
HEAD = b'<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>t</title>'
TAIL = b"</channel></rss>"


def repeated(unit: bytes, tail: bytes = TAIL, size: int = 5 * MiB) -> bytes:
    """HEAD, then `unit` as often as fits in `size` with `tail`."""
    return HEAD + unit * ((size - len(HEAD) - len(tail)) // len(unit)) + tail


def hostile_shapes(max_tags: int) -> dict[str, bytes]:
    """The shapes that cost feedparser most, by what they hold (5 MiB, the fetch's cap, unless
    named otherwise)."""
    return {
        "unclosed tags": repeated(b"<a>", tail=b""),
        "deep nesting, closed": HEAD + b"<a>" * (5 * MiB // 6) + b"</a>" * (5 * MiB // 6),
        "many entries": repeated(b"<item><guid>x</guid></item>"),
        "many tiny tags": repeated(b"<b/>"),
        "one huge attribute": HEAD + b'<item><enclosure url="' + b"a" * (5 * MiB) + b'"/></item>',
        "ten attributes a tag": repeated(
            b"<b " + b" ".join(b'a%d="1"' % n for n in range(10)) + b"/>"
        ),
        "40,000 attributes on one element (0.4 MB)": HEAD
        + b"<item><enclosure "
        + b" ".join(b'a%d="1"' % n for n in range(40_000))
        + b"/></item>"
        + TAIL,
        f"unclosed tags, {max_tags - 10:,} (as many as the count lets through)": HEAD
        + b"<item>" * (max_tags - 10),
    }


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def bench_feed_parsing(
    row: Callable[[str, str, str], None], real_feed: Callable[[int], bytes]
) -> None:
    """Each shape once through feedchecks.reader.read_feed: its CPU seconds (the child's and
    this process's), and what the check records. `real_feed(n)`: a feed of n items as hosts
    write them."""
    from feedchecks import parsing, reader

    whole = real_feed(10_000)
    shapes = {
        "a real feed of 100 items (45 KB): the child's own cost": real_feed(100),
        f"a real feed of 10,000 items ({len(whole) / 1e6:.1f} MB)": whole,
        # A bigger feed, cut by the fetch's cap: ill-formed, so feedparser reads it twice.
        "the same, cut short (a bigger feed at the fetch's cap)": whole[: len(whole) - 100],
        **hostile_shapes(parsing.MAX_TAGS),
    }
    bound = f"<= {reader.MAX_CPU_SECONDS + 1} s (MAX_CPU_SECONDS, rounded up)"
    print(f"\nReading feeds as a check does (feedchecks.reader: {reader.MAX_CPU_SECONDS} s of CPU)")
    worst = ("", 0.0)
    for name, data in shapes.items():
        cpu_before, own_before, started = children_cpu(), time.process_time(), time.monotonic()
        try:
            identity = reader.read_feed(data, episodes_kept=1000)
        except parsing.UnreadableFeed as exc:
            outcome = f"error: {exc}"
        else:
            outcome = f"read, {len(identity.episodes):,} episodes"
        took = time.monotonic() - started
        cpu = children_cpu() - cpu_before + time.process_time() - own_before
        row(f"read: {name}", f"{cpu:.2f} s CPU ({took:.1f} s by the clock); {outcome}", bound)
        if cpu > worst[1]:
            worst = (name, cpu)
    row("read: the costliest shape", f"{worst[1]:.2f} s CPU: {worst[0]}", bound)
