"""`make soak-hosts`, check 1: read-your-writes, a write answered by one host read on the other
at once, for every API."""

from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

from bench.harness import percentile
from bench.hosts_setup import (
    ROUNDS,
    FeedServer,
    basic,
    bearer,
    check,
    request,
    session,
    users,
)
from bench.soak import PASSWORD


class Reader:
    """One account synced by several apps, each writing on one host and reading on the other.

    The reads are what an app syncing on the other host asks next: GET one and the list since
    the last change it saw (/v1/), a pull since its last timestamp (gpodder, Nextcloud)."""

    def __init__(self, ports: dict[str, int], feeds: FeedServer):
        from accounts.services import app_password_create

        self.ports, self.feeds = ports, feeds
        self.user = users(1)[0]
        name = self.user.username
        self.token = request(
            ports["A"], "POST", "/v1/auth/login", {"username": name, "password": PASSWORD}
        ).json()["access_token"]
        self.cookie = request(
            ports["A"], "POST", f"/api/2/auth/{name}/login.json", headers=basic(name, PASSWORD)
        ).cookies["sessionid"]
        # Two Nextcloud apps: a phone that writes and a tablet that reads, each a device.
        self.phone = basic(name, app_password_create(user=self.user, name="phone")[1])
        self.tablet = basic(name, app_password_create(user=self.user, name="tablet")[1])
        self.guids: list[str] = []
        self.since = {"v1": "", "gpodder": 0, "episodes": 0, "nc": 0, "nc episodes": 0}
        self.took: dict[str, list[float]] = defaultdict(list)
        self.added: list[str] = []  # feed URLs whose adds were answered 200

    def call(self, host: str, method: str, path: str, body: Any, headers: dict[str, str]) -> Any:
        answer = request(self.ports[host], method, path, body, headers)
        self.took[host].append(answer.seconds * 1000)
        if answer.status != 200:
            raise AssertionError(
                f"{method} {path} on {host}: {answer.status} {answer.body[:200]!r}"
            )
        return answer.json()

    def v1_add(self, w: str, r: str, n: int) -> bool:
        url = self.feeds.url(f"/ryw/{n}.xml")
        added = self.call(
            w,
            "POST",
            "/v1/subscriptions",
            {"subscriptions": [{"feed_url": url}]},
            bearer(self.token),
        )["success"][0]
        self.added.append(url)
        self.guids.append(added["guid"])
        one = self.call(r, "GET", f"/v1/subscriptions/{added['guid']}", None, bearer(self.token))
        since = f"since={self.since['v1']}&" if self.since["v1"] else ""
        listed = self.call(
            r, "GET", f"/v1/subscriptions?{since}per_page=500", None, bearer(self.token)
        )["subscriptions"]
        self.since["v1"] = added["subscription_changed"]
        return one["feed_url"] == url and added["guid"] in {s["guid"] for s in listed}

    def v1_patch(self, w: str, r: str, n: int) -> bool:
        guid = self.guids[-1]
        wanted = n % 2 == 0
        self.call(
            w, "PATCH", f"/v1/subscriptions/{guid}", {"is_subscribed": wanted}, bearer(self.token)
        )
        one = self.call(r, "GET", f"/v1/subscriptions/{guid}", None, bearer(self.token))
        return bool(one["is_subscribed"] is wanted)

    def gpodder_subscriptions(self, w: str, r: str, n: int) -> bool:
        name, url = self.user.username, self.feeds.url(f"/ryw-gpodder/{n}.xml")
        self.call(
            w,
            "POST",
            f"/api/2/subscriptions/{name}/phone.json",
            {"add": [url], "remove": []},
            session(self.cookie),
        )
        self.added.append(url)
        pulled = self.call(
            r,
            "GET",
            f"/api/2/subscriptions/{name}/tablet.json?since={self.since['gpodder']}",
            None,
            session(self.cookie),
        )
        self.since["gpodder"] = pulled["timestamp"]
        return url in pulled["add"]

    def action(self, n: int, device: str) -> dict[str, Any]:
        return {
            "podcast": "https://ryw.example.com/podcast.xml",
            "action": "play",
            "position": n,
            "episode": f"https://ryw.example.com/{n}.mp3",
            "device": device,
        }

    def gpodder_episodes(self, w: str, r: str, n: int) -> bool:
        name, action = self.user.username, self.action(n, "phone")
        self.call(w, "POST", f"/api/2/episodes/{name}.json", [action], session(self.cookie))
        got = self.call(
            r,
            "GET",
            f"/api/2/episodes/{name}.json?since={self.since['episodes']}",
            None,
            session(self.cookie),
        )
        self.since["episodes"] = got["timestamp"]
        return action["episode"] in {a["episode"] for a in got["actions"]}

    def nextcloud_subscriptions(self, w: str, r: str, n: int) -> bool:
        url, app = self.feeds.url(f"/ryw-nextcloud/{n}.xml"), "/index.php/apps/gpoddersync"
        self.call(
            w, "POST", f"{app}/subscription_change/create", {"add": [url], "remove": []}, self.phone
        )
        self.added.append(url)
        pulled = self.call(
            r, "GET", f"{app}/subscriptions?since={self.since['nc']}", None, self.tablet
        )
        self.since["nc"] = pulled["timestamp"]
        return url in pulled["add"]

    def nextcloud_episodes(self, w: str, r: str, n: int) -> bool:
        action, app = self.action(n, "phone"), "/index.php/apps/gpoddersync"
        del action["device"]  # the app password's device
        self.call(w, "POST", f"{app}/episode_action/create", [action], self.phone)
        got = self.call(
            r, "GET", f"{app}/episode_action?since={self.since['nc episodes']}", None, self.tablet
        )
        self.since["nc episodes"] = got["timestamp"]
        return action["episode"] in {a["episode"] for a in got["actions"]}


def read_your_writes(ports: dict[str, int], feeds: FeedServer) -> list[str]:
    """Each round writes on one host and reads on the other at once; the hosts swap roles
    every round of all kinds. Returns the feed URLs whose adds were answered."""
    print(f"\n1. read-your-writes: {ROUNDS} rounds, written on one host, read on the other")
    reader = Reader(ports, feeds)
    kinds: dict[str, Callable[[str, str, int], bool]] = {
        "/v1/ add -> GET one and list": reader.v1_add,
        "/v1/ PATCH -> GET one": reader.v1_patch,
        "gpodder upload -> pull (cookie)": reader.gpodder_subscriptions,
        "gpodder episode upload -> download": reader.gpodder_episodes,
        "Nextcloud change -> pull (app passwords)": reader.nextcloud_subscriptions,
        "Nextcloud episode action -> download": reader.nextcloud_episodes,
    }
    rounds: Counter[str] = Counter()
    stale: Counter[str] = Counter()
    for n in range(ROUNDS):
        kind = list(kinds)[n % len(kinds)]
        w, r = ("A", "B") if (n // len(kinds)) % 2 == 0 else ("B", "A")
        rounds[kind] += 1
        try:
            fresh = kinds[kind](w, r, n)
        except AssertionError as exc:
            print(f"  round {n}: {exc}")
            fresh = False
        if not fresh:
            stale[kind] += 1
    for kind in kinds:
        print(f"  {kind:<42} {rounds[kind]:4d} rounds, {stale[kind]} stale or failed")
    for host, took in reader.took.items():
        print(
            f"  host {host}: {len(took)} requests, p50 {percentile(took, 0.5):.1f} ms, "
            f"p99 {percentile(took, 0.99):.1f} ms"
        )
    total = sum(stale.values())
    check(
        "read-your-writes across hosts (6 kinds, 3 APIs)",
        f"{total} stale of {ROUNDS} rounds",
        "0 stale",
        total == 0,
    )
    return reader.added
