"""An import's cost (BENCH_ONLY=imports; bench/README.md, "Importing a history"): 100,000
episode actions on 4 devices from a gpodder.net episode-actions file, in this process on the
bench's PostgreSQL, as `manage.py import_history` and the page run it; again, when everything is
there already; and the memory it takes, against a tenth of it (flat: streamed, not held)."""

import json
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.harness import row

ACTIONS = 100_000
DEVICES = ("phone", "tablet", "laptop", "desktop")
PODCASTS = 200


def history_file(folder: Path, count: int) -> Path:
    """A gpodder.net answer of `count` actions over PODCASTS feeds and DEVICES, written out."""
    path = folder / f"gpodder-net-{count}.json"
    with path.open("w") as out:
        out.write('{"actions": [')
        for n in range(count):
            podcast = f"https://feeds.example.com/{n % PODCASTS}/rss"
            action: dict[str, Any] = {
                "podcast": podcast,
                "episode": f"https://cdn.example.com/{n % PODCASTS}/{n}.mp3",
                "action": "play" if n % 4 else "download",
                "timestamp": f"2015-{1 + n % 12:02d}-{1 + n % 28:02d}T{n % 24:02d}:00:00",
                "device": DEVICES[n % len(DEVICES)],
                "guid": f"urn:episode:{n}",
            }
            if n % 4:
                action.update(started=0, position=n % 3600, total=3600)
            out.write(("," if n else "") + json.dumps(action))
        out.write('], "timestamp": 1700000000}')
    return path


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _imported(username: str, path: Path) -> tuple[float, Any]:
    from django.conf import settings
    from django.contrib.auth import get_user_model

    from imports.files import file_source
    from imports.services import history_import

    user, _ = get_user_model().objects.get_or_create(username=username)
    start = time.perf_counter()
    with path.open("rb") as file:
        source = file_source(file, max_actions=settings.IMPORT_MAX_ACTIONS)
        summary = history_import(user=user, source=source)
    return time.perf_counter() - start, summary


def bench_imports() -> None:
    print("Importing a history (in this process, on PostgreSQL)")
    with tempfile.TemporaryDirectory(prefix="import-bench-") as folder:
        small = history_file(Path(folder), ACTIONS // 10)
        big = history_file(Path(folder), ACTIONS)
        before = _peak_mb()
        took_small, _ = _imported("import-bench-small", small)
        after_small = _peak_mb()
        took, summary = _imported("import-bench", big)
        after_big = _peak_mb()
        again, second = _imported("import-bench", big)
    print(
        f"  {ACTIONS // 10:,} actions: {took_small:.1f} s; {ACTIONS:,}: {took:.1f} s "
        f"({summary.actions_imported:,} imported, {summary.refused} refused, "
        f"{summary.devices} devices, {summary.podcasts_added} podcasts); again: {again:.1f} s "
        f"({second.actions_already:,} already there); peak RSS {before:.0f} MB, after "
        f"{ACTIONS // 10:,} {after_small:.0f} MB, after {ACTIONS:,} {after_big:.0f} MB",
        flush=True,
    )
    row(
        f"imports: {ACTIONS:,} actions on {len(DEVICES)} devices from a gpodder.net file",
        f"{took:.1f} s ({ACTIONS / took:,.0f} actions/s); again, all there: {again:.1f} s",
        "at most 60 s",
    )
    row(
        "imports: peak memory, before / after a tenth / after the whole",
        f"{before:.0f} / {after_small:.0f} / {after_big:.0f} MB",
        "flat (streamed)",
    )
