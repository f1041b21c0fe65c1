"""The catalogue's SQLite statements (the embedded default, `make run`), run in a process of
their own on a fresh SQLite file: the rest of the suite runs on PostgreSQL."""

from pathlib import Path

from tests.sqlite import run_on_sqlite

SCRIPT = r"""
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from feedchecks.catalogue import catalogue_store
from feedchecks.models import FeedCheck, FeedEpisode
from feedchecks.parsing import feed_items
from subscriptions.feeds import url_key_digest

def items(names, *, dated=False, url="https://m.example/"):
    return feed_items(
        [
            {
                "id": name,
                "title": f"Title {name}",
                "enclosures": [{"href": f"{url}{name}.mp3"}],
                **({"published_parsed": (2024, 1, 1 + n, 0, 0, 0, 0, 0, 0)} if dated else {}),
            }
            for n, name in enumerate(names)
        ],
        kept=1000,
    )

def kept(check):
    return sorted(FeedEpisode.objects.filter(feed=check).values_list("guid", flat=True))

check = FeedCheck.objects.create(key_digest="a" * 64, url="https://f.example/rss")
# Undated feeds: the newest check's items are kept, not the first ever seen.
assert catalogue_store(feed_id=check.pk, items=items(["g0", "g1", "g2"]), kept=3) == (3, 0)
assert catalogue_store(feed_id=check.pk, items=items(["h0", "h1", "h2"]), kept=3) == (3, 3)
assert kept(check) == ["h0", "h1", "h2"], kept(check)
# An unchanged feed writes nothing; a changed item is changed in place, its old URL kept.
assert catalogue_store(feed_id=check.pk, items=items(["h0", "h1", "h2"]), kept=3) == (0, 0)
moved = items(["h0"], url="https://tracker.example/r/m.example/")
assert catalogue_store(feed_id=check.pk, items=moved, kept=3) == (1, 0)
row = FeedEpisode.objects.get(feed=check, guid="h0")
assert row.url == "https://tracker.example/r/m.example/h0.mp3"
assert row.earlier_url_key == url_key_digest("https://m.example/h0.mp3")
# Dated: the newest by date of old and new together.
dated = FeedCheck.objects.create(key_digest="b" * 64, url="https://f.example/dated")
catalogue_store(feed_id=dated.pk, items=items(["a", "b", "c", "d"], dated=True)[2:], kept=2)
catalogue_store(feed_id=dated.pk, items=items(["a", "b", "c", "d"], dated=True)[:2], kept=2)
assert kept(dated) == ["c", "d"], kept(dated)
print("ok")
"""


def test_the_catalogue_on_sqlite(tmp_path: Path) -> None:
    run_on_sqlite(SCRIPT, tmp_path)
