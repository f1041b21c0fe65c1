"""How AntennaPod and Kasts sync episode actions, replayed.

AntennaPod (SyncService.syncEpisodeActions, GpodnetService): one download since its last
timestamp, then its queued actions uploaded 30 at a time, each with its `device` and `guid`; on
its first sync a play action for every played episode. It keeps the last upload's timestamp
(else the download's) as its next `since`. It parses times as `yyyy-MM-dd'T'HH:mm:ss` in UTC.

Kasts (SyncJob, GPodder): Basic on every request, its Qt network manager keeping cookies while it
runs; the first download with `aggregated=true`, then downloads again while the answered
timestamp is more than 10 s old; uploads 30 at a time, compact JSON labelled as a form, times
as Qt's ISO date with the Z cut off, `guid` and `device` always present (empty when unknown);
stores every answered timestamp plus 1.
"""

import json
import re
import time
from base64 import b64encode
from typing import Any

import requests

from tests.gpodder.clients import TIMEOUT
from tests.gpodder.clients import AntennaPod as AntennaPodSubscriptions
from tests.helpers import PASSWORD

# How AntennaPod's SimpleDateFormat and Kasts' QDateTime::fromString read a timestamp.
APP_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$")


class AntennaPod(AntennaPodSubscriptions):
    BATCH = 30

    def __init__(self, base: str, username: str, device: str):
        super().__init__(base, username, device)
        self.last_episode_sync = 0
        self.uploads = 0

    def episode_sync(self, queued: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """One round: returns the remote actions read, as EpisodeAction.readFromJsonObject
        keeps them (it drops one missing podcast, episode or action)."""
        response = self.http.get(
            f"{self.base}/api/2/episodes/{self.username}.json",
            params={"since": self.last_episode_sync},
            timeout=TIMEOUT,
        )
        assert response.status_code == 200, response.text
        answer = response.json()
        new_timestamp = int(answer["timestamp"])
        remote = []
        for action in answer["actions"]:
            assert all(action[key] for key in ("podcast", "episode", "action")), action
            assert APP_TIME.match(action["timestamp"]), action
            remote.append(action)
        for start in range(0, len(queued), self.BATCH):
            batch = [{**a, "device": self.device} for a in queued[start : start + self.BATCH]]
            posted = self.http.post(
                f"{self.base}/api/2/episodes/{self.username}.json",
                data=json.dumps(batch).encode(),
                headers={"Content-Type": "application/json; charset=utf-8"},
                timeout=TIMEOUT,
            )
            assert posted.status_code == 200, posted.text
            self.uploads += 1
            reply = posted.json()
            new_timestamp = int(reply["timestamp"])  # it throws when a key is missing
            assert isinstance(reply["update_urls"], list)
        self.last_episode_sync = new_timestamp
        return remote


class Kasts:
    def __init__(self, base: str, username: str, device: str):
        self.base, self.username, self.device = base, username, device
        token = b64encode(f"{username}:{PASSWORD}".encode()).decode()
        self.http = requests.Session()  # QNetworkAccessManager's cookie jar, while it runs
        self.http.headers["Authorization"] = f"Basic {token}"
        self.episode_since = 0
        self.downloads = 0

    def store(self, timestamp: int) -> None:
        if timestamp > 1:  # SyncJob::updateDBTimestamp
            self.episode_since = timestamp + 1

    def episode_sync(self, local: list[dict[str, Any]]) -> list[dict[str, Any]]:
        remote: list[dict[str, Any]] = []
        while True:
            since = self.episode_since
            aggregated = "true" if since == 0 else "false"
            response = self.http.get(
                f"{self.base}/api/2/episodes/{self.username}.json"
                f"?since={since}&aggregated={aggregated}",
                timeout=TIMEOUT,
            )
            assert response.status_code == 200, response.text
            self.downloads += 1
            answer = response.json()
            for action in answer["actions"]:
                assert APP_TIME.match(action["timestamp"].split(".")[0]), action
            remote += answer["actions"]
            self.store(answer["timestamp"])
            if answer["timestamp"] > time.time() - 10 or not answer["actions"]:
                break
        for start in range(0, len(local), 30):
            batch = [
                {
                    "podcast": a["podcast"],
                    "episode": a["episode"],
                    "guid": a.get("guid", ""),
                    "device": self.device,
                    "action": a["action"],
                    "timestamp": a["timestamp"],
                    **{k: a[k] for k in ("started", "position", "total") if k in a},
                }
                for a in local[start : start + 30]
            ]
            posted = self.http.post(
                f"{self.base}/api/2/episodes/{self.username}.json",
                data=json.dumps(batch, separators=(",", ":")).encode(),
                headers={"Content-Type": "application/x-www-form-urlencoded"},
                timeout=TIMEOUT,
            )
            assert posted.status_code == 200, posted.text
            self.store(posted.json()["timestamp"])
        return remote
