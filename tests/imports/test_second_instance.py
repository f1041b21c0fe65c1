"""Importing from a second instance of this service, over each protocol it speaks (the gpodder
API and the Nextcloud paths), filled by mygpoclient, gPodder's own library: the import brings
back everything that instance's own API answers, including a device's own spelling."""

import base64
import http.client
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mygpoclient import api

from episodes.models import EpisodeAction
from gpodder.models import Device
from gpodder.services import subscription_pull
from imports.remote import Account, server_source
from imports.services import history_import
from subscriptions.models import Subscription
from tests import servers

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
USER, PASSWORD = "carol", "carol's long password"
FEED = "https://feeds.example.com/show.xml"
PHONE_SPELLING = "HTTPS://FEEDS.example.com/show.xml/"
OTHER = "https://other.example.org/podcast/rss"


def call(port: int, path: str) -> Any:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    token = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    conn.request("GET", path, headers={"Authorization": f"Basic {token}"})
    response = conn.getresponse()
    body = response.read()
    conn.close()
    assert response.status == 200, (path, response.status, body[:200])
    return json.loads(body)


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """This service as a home server of its own (SQLite in its data folder, plain HTTP), `carol`
    on it with two devices, a spelling of her phone's, and episode actions, all sent by
    mygpoclient: its port."""
    env = {
        "PATH": os.environ["PATH"],
        "DJANGO_SETTINGS_MODULE": "config.settings.base",
        "DATA_DIR": str(tmp_path_factory.mktemp("second")),
    }

    def manage(*args: str) -> None:
        subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True,
        )  # fmt: skip

    manage("migrate", "--noinput")
    manage(
        "shell", "-c",
        "from django.contrib.auth import get_user_model; "
        f"get_user_model().objects.create_user({USER!r}, password={PASSWORD!r})",
    )  # fmt: skip
    with servers.runserver(env) as port:
        client = api.MygPodderClient(USER, PASSWORD, root_url=f"http://127.0.0.1:{port}")
        client.update_device_settings("phone", caption="Carol's phone 📱", type="mobile")
        client.update_device_settings("laptop", caption="Work laptop", type="laptop")
        client.update_subscriptions("phone", [PHONE_SPELLING, OTHER], [])
        client.update_subscriptions("laptop", [FEED], [])
        client.upload_episode_actions(
            [
                api.EpisodeAction(FEED, f"https://cdn.example.com/show/{n}.mp3", "play",
                                  device="phone" if n % 2 else "laptop",
                                  timestamp=f"2024-05-0{n + 1}T10:30:00",
                                  started=15, position=100 * n, total=3600)
                for n in range(6)
            ]
            + [api.EpisodeAction(OTHER, "https://other.example.org/e.mp3", "download",
                                 device="phone", timestamp="2023-12-24T08:00:00")]
        )  # fmt: skip
        yield port


@pytest.fixture
def loopback(settings: Any) -> None:
    settings.IMPORT_ALLOWED_NETWORKS = ["127.0.0.0/8"]


def shown(action: dict[str, Any], *, device: bool = True) -> tuple[Any, ...]:
    return (
        action["podcast"], action["episode"], action["action"], action["timestamp"],
        action.get("device") if device else None, action.get("guid"),
        action.get("started"), action.get("position"), action.get("total"),
    )  # fmt: skip


def imported(user: Any, port: int, protocol: str) -> Any:
    account = Account(f"http://127.0.0.1:{port}", USER, PASSWORD, protocol=protocol)
    with server_source(account) as source:
        return source.kind, history_import(user=user, source=source)


@pytest.mark.usefixtures("loopback")
def test_the_gpodder_api_brings_everything_back(instance: int, alice: Any, app: Any) -> None:
    kind, summary = imported(alice, instance, "auto")
    assert kind == "the gpodder API at 127.0.0.1"
    assert summary.refused == 0, summary.refusals
    devices = {d.device_id: (d.caption, d.type) for d in Device.objects.filter(user=alice)}
    assert devices == {"phone": ("Carol's phone 📱", "mobile"), "laptop": ("Work laptop", "laptop")}
    assert (summary.podcasts_added, summary.podcasts_merged) == (2, 0)
    # The laptop, first in that instance's device list, names the subscription; the phone keeps
    # its own spelling of it.
    feeds = set(Subscription.objects.filter(user=alice).values_list("feed_url", flat=True))
    assert feeds == {FEED, OTHER}
    assert PHONE_SPELLING in subscription_pull(user=alice, device_id="phone", since=0).add
    assert FEED in subscription_pull(user=alice, device_id="laptop", since=0).add
    # Every action that instance answers, as this one now answers it.
    there = call(instance, f"/api/2/episodes/{USER}.json?since=0")["actions"]
    here = app.get("/api/2/episodes/alice.json", {"since": 0}).json()["actions"]
    assert len(there) == 7 == summary.actions_imported
    assert sorted(map(shown, here)) == sorted(map(shown, there))


@pytest.mark.usefixtures("loopback")
def test_the_nextcloud_paths_bring_the_subscriptions_and_actions(instance: int, bob: Any) -> None:
    kind, summary = imported(bob, instance, "nextcloud")
    assert kind == "the Nextcloud gPodder Sync app at 127.0.0.1"
    assert summary.refused == 0, summary.refusals
    assert list(Device.objects.filter(user=bob).values_list("device_id", flat=True)) == [
        "nextcloud"
    ]
    there = call(instance, "/index.php/apps/gpoddersync/subscriptions?since=0")["add"]
    assert sorted(subscription_pull(user=bob, device_id="nextcloud", since=0).add) == sorted(there)
    actions = call(instance, "/index.php/apps/gpoddersync/episode_action?since=0")["actions"]
    assert summary.actions_imported == len(actions) == 7
    assert EpisodeAction.objects.filter(user=bob, device__isnull=True).count() == 7
