"""The embedded default (`make run`: SQLite, tasks in-process) serving the API over HTTP.

The rest of the suite runs on PostgreSQL; the reads written out in SQL must answer the same on
SQLite, which stores UUIDs and timestamps as text.
"""

import base64
import http.client
import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import servers
from tests.feedchecks.feedserver import FeedServer
from tests.helpers import wait_until

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, str]]:
    """`make run`'s steps on a fresh SQLite file: the port, and the staff password printed."""
    env = {
        "PATH": os.environ["PATH"],
        "DJANGO_SETTINGS_MODULE": "config.settings.base",
        "DEBUG": "true",
        "DATABASE_URL": f"sqlite:///{tmp_path_factory.mktemp('embedded') / 'db.sqlite3'}",
        # The feed checks may reach the test's feed server on loopback.
        "FEED_FETCH_ALLOWED_NETWORKS": "127.0.0.0/8",
    }

    def manage(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True,
        )  # fmt: skip
        return done.stdout

    manage("migrate", "--noinput")
    password = re.search(r"with password: (\S+)", manage("ensure_staff"))[1]  # type: ignore[index]
    with servers.runserver(env) as port:
        yield port, password


def call(
    port: int,
    method: str,
    path: str,
    body: Any = None,
    token: str | None = None,
    basic: tuple[str, str] | None = None,
) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if basic:
        headers["Authorization"] = "Basic " + base64.b64encode(":".join(basic).encode()).decode()
    try:
        conn.request(method, path, None if body is None else json.dumps(body), headers)
        response = conn.getresponse()
        payload = response.read()
    except OSError:
        return 0, None
    finally:
        conn.close()
    return response.status, json.loads(payload) if payload else None


def test_the_embedded_default_serves_a_sync(service):
    port, password = service
    status, tokens = call(
        port, "POST", "/v1/auth/login", {"username": "admin", "password": password}
    )
    assert status == 200, tokens
    token = tokens["access_token"]

    feeds = [{"feed_url": f"https://example.com/{i}.xml"} for i in range(5)]
    status, added = call(port, "POST", "/v1/subscriptions", {"subscriptions": feeds}, token)
    assert status == 200, added
    assert len(added["success"]) == 5, added
    first = added["success"][0]
    since = first["subscription_changed"]
    time.sleep(0.01)

    new_guid = str(uuid.uuid4())
    status, changed = call(
        port, "PATCH", f"/v1/subscriptions/{first['guid']}", {"new_guid": new_guid}, token
    )
    assert status == 200, changed
    status, got = call(port, "GET", f"/v1/subscriptions/{first['guid']}", token=token)
    assert status == 200, got
    assert got == {
        "feed_url": "https://example.com/0.xml",
        "guid": first["guid"],
        "is_subscribed": True,
        "subscription_changed": since,
        "new_guid": new_guid,
        "guid_changed": changed["guid_changed"],
    }

    status, page = call(port, "GET", "/v1/subscriptions?per_page=2&page=3", token=token)
    assert status == 200, page
    assert (page["total"], page["page"], page["per_page"]) == (5, 3, 2)
    assert [item["feed_url"] for item in page["subscriptions"]] == ["https://example.com/4.xml"]
    assert "next" not in page
    assert page["previous"].endswith("page=2&per_page=2")

    status, changed_since = call(
        port, "GET", f"/v1/subscriptions?since={since.replace('+', '%2B')}", token=token
    )
    assert status == 200, changed_since
    assert changed_since["total"] == 1
    [item] = changed_since["subscriptions"]
    assert (item["guid"], item["new_guid"]) == (first["guid"], new_guid)

    # Adds that reach what exists (a variant of a URL, a sent guid) and a feed moved by the
    # same request that made it: the written-out SQL's SQLite forms.
    sent = str(uuid.uuid4())
    entries = [
        {"feed_url": "HTTPS://Example.COM:443/1.xml/"},
        {"feed_url": "https://例え.jp/フィード", "guid": sent},
        {"feed_url": "https://例え.jp/新しい", "guid": sent},
    ]
    status, again = call(port, "POST", "/v1/subscriptions", {"subscriptions": entries}, token)
    assert status == 200, again
    assert [s["guid"] for s in again["success"]] == [added["success"][1]["guid"], sent, sent]
    status, moved = call(port, "GET", f"/v1/subscriptions/{sent}", token=token)
    assert (status, moved["feed_url"]) == (200, "https://例え.jp/新しい")
    status, page = call(port, "GET", "/v1/subscriptions", token=token)
    assert page["total"] == 6, page

    # Episode actions through the gpodder API: the received-second lock and the insert that
    # skips what is stored already, in their SQLite forms.
    admin = ("admin", password)
    actions = [
        {"podcast": "https://example.com/0.xml", "episode": "https://example.com/0/1.mp3",
         "action": "play", "position": 30, "device": "phone", "timestamp": "2024-05-01T10:00:00"},
        {"podcast": "https://example.com/2.xml", "episode": "https://example.com/2/1.mp3",
         "action": "download", "timestamp": "2024-05-01T10:30:00+02:00"},
    ]  # fmt: skip
    for _ in range(2):  # sent again: stored once
        status, uploaded = call(port, "POST", "/api/2/episodes/admin.json", actions, basic=admin)
        assert status == 200, uploaded
    status, got = call(port, "GET", "/api/2/episodes/admin.json?since=0", basic=admin)
    assert status == 200, got
    assert [(a["episode"], a["timestamp"]) for a in got["actions"]][1:] == [
        ("https://example.com/2/1.mp3", "2024-05-01T08:30:00")
    ]
    assert len(got["actions"]) == 2

    status, deletion = call(port, "DELETE", f"/v1/subscriptions/{new_guid}", token=token)
    assert status == 202, deletion
    deadline = time.monotonic() + 30
    while (state := call(port, "GET", f"/v1/deletions/{deletion['deletion_id']}", token=token))[1][
        "status"
    ] != "SUCCESS":
        assert time.monotonic() < deadline, state
        time.sleep(0.1)
    assert call(port, "GET", f"/v1/subscriptions/{first['guid']}", token=token)[0] == 410
    # The deleted subscription's episode actions went with it.
    status, got = call(port, "GET", "/api/2/episodes/admin.json?since=0", basic=admin)
    assert [a["episode"] for a in got["actions"]] == ["https://example.com/2/1.mp3"]


def test_the_embedded_default_checks_feeds_off_the_requests_path(service):
    """No broker: a background thread fetches each feed added, and its title names it in the
    OPML export (and on the pages)."""
    port, password = service
    token = call(port, "POST", "/v1/auth/login", {"username": "admin", "password": password})[1][
        "access_token"
    ]
    feeds = FeedServer().start()
    try:
        feeds.feed(
            "/titled.xml",
            b'<?xml version="1.0"?><rss version="2.0"><channel><title>Embedded &amp; Titled'
            b"</title><item><title>1</title></item></channel></rss>",
        )
        url = feeds.url("/titled.xml")
        status, added = call(
            port, "POST", "/v1/subscriptions", {"subscriptions": [{"feed_url": url}]}, token
        )
        assert status == 200, added

        def exported() -> str:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request(
                "GET", "/v1/subscriptions.opml", headers={"Authorization": f"Bearer {token}"}
            )
            return conn.getresponse().read().decode()

        wait_until(lambda: 'title="Embedded &amp; Titled"' in exported(), 30, exported)
        assert feeds.requests == ["/titled.xml"]
    finally:
        feeds.stop()


def test_the_embedded_default_serves_the_nextcloud_paths(service):
    """An app in Nextcloud mode against `make run`: the four data paths, a first sync, and the
    start and first poll of its login, on SQLite."""
    port, password = service
    admin = ("admin", password)
    app = "/index.php/apps/gpoddersync"
    feed = "https://nextcloud.example.com/show.xml"

    status, answer = call(port, "GET", f"{app}/subscriptions?since=0", basic=admin)
    assert status == 200, answer
    assert answer["remove"] == []
    status, uploaded = call(
        port, "POST", f"{app}/subscription_change/create", {"add": [feed]}, basic=admin
    )
    assert status == 200, uploaded
    plays = [
        {
            "podcast": feed,
            "episode": f"https://nextcloud.example.com/{n}.mp3",
            "action": "PLAY",
            "timestamp": "2026-11-25T10:00:00",
            "started": 0,
            "position": 60 + n,
            "total": 600,
        }
        for n in range(45)
    ]
    for start in range(0, len(plays), 30):  # AntennaPod's batches
        status, stored = call(
            port, "POST", f"{app}/episode_action/create", plays[start : start + 30], basic=admin
        )
        assert status == 200, stored
    # Kasts' doubled slash and a trailing one.
    doubled = "//index.php/apps/gpoddersync/subscriptions/?since=0"
    status, pulled = call(port, "GET", doubled, basic=admin)
    assert status == 200, pulled
    assert feed in pulled["add"]
    status, actions = call(port, "GET", f"{app}/episode_action?since=0", basic=admin)
    assert status == 200, actions
    ours = [a for a in actions["actions"] if a["podcast"] == feed]  # the module's other test
    assert len(ours) == 45
    assert {(a["action"], a["timestamp"]) for a in ours} == {("play", "2026-11-25T10:00:00")}

    status, flow = call(port, "POST", "/index.php/login/v2")
    assert status == 200, flow
    assert flow["login"].startswith(f"http://127.0.0.1:{port}/login/flow/")
    status, waiting = call(port, "POST", f"/index.php/login/v2/poll?token={flow['poll']['token']}")
    assert (status, waiting) == (404, [])


def test_the_embedded_default_names_played_episodes_from_the_feed(service):
    """On SQLite, with feed checks on threads: a feed check keeps the feed's episodes, and the
    pages a person signs in to name what an app played by its title in the feed. A feed that
    answers 500 has nothing kept: its action is named by the URL's file name."""
    import html
    import urllib.parse
    import urllib.request
    from http.cookiejar import CookieJar

    port, password = service
    base = f"http://127.0.0.1:{port}"
    token = call(port, "POST", "/v1/auth/login", {"username": "admin", "password": password})[1][
        "access_token"
    ]
    items = "".join(
        f"<item><title>Embedded episode {n} &amp;lt;b&amp;gt;</title><guid>emb-{n}</guid>"
        f'<enclosure url="https://media.example/embedded/{n}.mp3" type="audio/mpeg"/>'
        f"<pubDate>Wed, 0{n} May 2024 12:00:00 GMT</pubDate></item>"
        for n in (1, 2, 3)
    )
    feeds = FeedServer().start()
    try:
        feeds.feed(
            "/named.xml",
            b'<?xml version="1.0"?><rss version="2.0"><channel><title>Embedded Names</title>'
            + items.encode()
            + b"</channel></rss>",
        )
        feeds.feed("/broken.xml", b"Internal Server Error", status=500)
        named, broken = feeds.url("/named.xml"), feeds.url("/broken.xml")
        status, added = call(
            port,
            "POST",
            "/v1/subscriptions",
            {"subscriptions": [{"feed_url": named}, {"feed_url": broken}]},
            token,
        )
        assert status == 200, added
        guid = next(s["guid"] for s in added["success"] if s["feed_url"] == named)

        plays = [
            # gPodder: no guid, the enclosure's URL.
            {"podcast": named, "episode": "https://media.example/embedded/1.mp3",
             "action": "play", "position": 90, "total": 1800, "started": 0,
             "device": "laptop", "timestamp": "2024-06-01T10:00:00"},
            # An app sending the guid, under a URL the feed never listed.
            {"podcast": named, "episode": "https://cdn.example/other-name.mp3", "guid": "emb-2",
             "action": "download", "device": "laptop", "timestamp": "2024-06-01T11:00:00"},
            {"podcast": broken, "episode": "https://media.example/broken/lost-episode.mp3",
             "action": "play", "position": 30, "device": "laptop",
             "timestamp": "2024-06-01T12:00:00"},
        ]  # fmt: skip
        status, uploaded = call(
            port, "POST", "/api/2/episodes/admin.json", plays, basic=("admin", password)
        )
        assert status == 200, uploaded

        # The checks run on the service's threads: both feeds fetched, the first one titled.
        def opml() -> str:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request(
                "GET", "/v1/subscriptions.opml", headers={"Authorization": f"Bearer {token}"}
            )
            return conn.getresponse().read().decode()

        wait_until(
            lambda: (
                {"/named.xml", "/broken.xml"} <= set(feeds.requests)
                and 'title="Embedded Names"' in opml()
            ),
            30,
            lambda: f"{feeds.requests} {opml()}",
        )
    finally:
        feeds.stop()

    # Signed in as a browser is: the sign-in page's CSRF cookie and token, the form posted.
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))
    form = browser.open(f"{base}/login/", timeout=30).read().decode()
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
    assert csrf is not None, form
    fields = {"username": "admin", "password": password, "csrfmiddlewaretoken": csrf[1]}
    signed = browser.open(
        urllib.request.Request(
            f"{base}/login/",
            data=urllib.parse.urlencode(fields).encode(),
            headers={"Referer": f"{base}/login/"},
        ),
        timeout=30,
    )
    assert signed.url == f"{base}/podcasts/", signed.read().decode()

    def read(path: str) -> str:
        page = browser.open(base + path, timeout=30)
        assert page.status == 200
        return page.read().decode()

    def text(markup: str) -> str:
        return " ".join(html.unescape(re.sub(r"<[^>]*>", " ", markup)).split())

    # The history, by podcast (the module's other tests' podcasts are there too).
    sections = [text(part) for part in read("/history/").split('<section class="history">')[1:]]
    [ours] = [section for section in sections if "Embedded Names" in section]
    assert (
        "Embedded Names 2 episodes Embedded episode 2 <b> published 2024-05-02 Downloaded" in ours
    )
    assert "Embedded episode 1 <b> published 2024-05-01 Played to 1:30 of 30:00" in ours
    assert ".mp3" not in ours
    # The feed that answered 500: its URL heads its section, its action by the file name.
    [lost] = [section for section in sections if broken in section]
    assert f"{broken} 1 episode lost-episode.mp3 Played to 0:30 on laptop" in lost
    # The podcast's page lists the feed's episodes, newest first, with what was played.
    podcast = text(read(f"/podcasts/{guid}/"))
    episodes = podcast[podcast.index("Episodes") : podcast.index("Listening history")]
    assert re.search(
        r"Embedded episode 3 <b> 2024-05-03 not played"
        r".*Embedded episode 2 <b> 2024-05-02 Downloaded on laptop"
        r".*Embedded episode 1 <b> 2024-05-01 Played to 1:30 of 30:00 on laptop",
        episodes,
    ), episodes
