"""An import's cost (BENCH_ONLY=imports; bench/README.md, "Importing a history"): 100,000
episode actions on 4 devices from a gpodder.net episode-actions file, in this process on the
bench's PostgreSQL, as `manage.py import_history` and the page run it; again, when everything is
there already; and the memory it takes, against a tenth of it (flat: streamed, not held). Then
a real oPodSync under `php -S` (bench/peers.py's), filled through its API on two devices,
imported from over the network, and checked against what its own API answers."""

import base64
import http.client
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


OPODSYNC_ACTIONS = 10_000


def _opodsync_call(url: str, method: str, path: str, body: Any = None) -> Any:
    from bench.peers import USER
    from bench.sync import PASSWORD

    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=120)
    token = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    data = None if body is None else json.dumps(body).encode()
    conn.request(method, path, data, {"Authorization": f"Basic {token}"})
    response = conn.getresponse()
    answer = response.read()
    conn.close()
    if response.status != 200:
        raise RuntimeError(f"oPodSync answered {response.status} to {path}: {answer[:200]!r}")
    return json.loads(answer) if answer.strip() else None


def bench_opodsync_import() -> None:
    """oPodSync filled as gPodder and AntennaPod would fill it, then imported from."""
    from django.contrib.auth import get_user_model
    from django.test import override_settings

    from bench.peers import USER, opodsync, opodsync_source
    from bench.sync import PASSWORD
    from episodes.models import EpisodeAction
    from imports.remote import Account, server_source
    from imports.services import history_import

    opodsync_source()
    with (
        tempfile.TemporaryDirectory(prefix="import-opodsync-") as folder,
        opodsync(Path(folder), fpm=False) as (url, _),
    ):
        feeds = [f"https://feeds.example.com/{n}/rss" for n in range(20)]
        for device, caption, kind in (("pixel", "Pixel 8", "mobile"), ("desk", "Desk", "desktop")):
            _opodsync_call(url, "POST", f"/api/2/devices/{USER}/{device}.json",
                           {"caption": caption, "type": kind})  # fmt: skip
            _opodsync_call(url, "POST", f"/api/2/subscriptions/{USER}/{device}.json",
                           {"add": feeds, "remove": []})  # fmt: skip
        for first in range(0, OPODSYNC_ACTIONS, 1000):
            _opodsync_call(url, "POST", f"/api/2/episodes/{USER}.json", [
                {"podcast": feeds[n % 20], "episode": f"https://cdn.example.com/{n}.mp3",
                 "action": "play", "timestamp": f"2024-{1 + n % 12:02d}-01T10:00:00",
                 "device": "pixel" if n % 2 else "desk",
                 "started": 0, "position": n % 3600, "total": 3600}
                for n in range(first, first + 1000)
            ])  # fmt: skip
        theirs = _opodsync_call(url, "GET", f"/api/2/episodes/{USER}.json?since=0")["actions"]
        user, _ = get_user_model().objects.get_or_create(username="import-bench-opodsync")
        start = time.perf_counter()
        with (
            override_settings(IMPORT_ALLOWED_NETWORKS=["127.0.0.0/8"]),
            server_source(Account(url, USER, PASSWORD)) as source,
        ):
            summary = history_import(user=user, source=source)
        took = time.perf_counter() - start
    ours = EpisodeAction.objects.filter(user=user).count()
    print(
        f"  from oPodSync (php -S): {len(theirs):,} actions in its answer, {ours:,} here, "
        f"{summary.devices} devices, {summary.podcasts_added} podcasts, "
        f"{summary.refused} refused, in {took:.1f} s",
        flush=True,
    )
    row(
        "imports: from a real oPodSync (php -S), 2 devices",
        f"{ours:,} of its {len(theirs):,} actions in {took:.1f} s; {summary.refused} refused",
        "all of them",
    )
