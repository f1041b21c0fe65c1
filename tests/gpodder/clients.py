"""How AntennaPod and Kasts talk to a gpodder server, replayed.

Written from their sync code: AntennaPod's GpodnetService (OkHttp with a cookie jar) sends Basic
only to login.json, with an empty body labelled `plain/text; charset=utf-8`, then its cookie
alone; JSON bodies as `application/json; charset=utf-8`; it reads `timestamp` and `update_urls`
from uploads and keeps the upload's timestamp as its next `since`. Kasts (Qt) sends Basic on
every request; this replay carries no cookie back (its Qt network manager keeps cookies only
while it runs: as on each start of the app, the hardest case). It posts compact JSON that Qt
labels `application/x-www-form-urlencoded`, and stores the answered timestamp plus 1.
"""

from base64 import b64encode
from typing import Any

import requests

from tests.helpers import PASSWORD

TIMEOUT = 10


class AntennaPod:
    """GpodnetService's requests, one device of one account."""

    def __init__(self, base: str, username: str, device: str):
        self.base, self.username, self.device = base, username, device
        self.http = requests.Session()  # OkHttp's cookie jar
        self.last_sync = 0

    def login(self) -> None:
        token = b64encode(f"{self.username}:{PASSWORD}".encode()).decode()
        response = self.http.post(
            f"{self.base}/api/2/auth/{self.username}/login.json",
            data=b"",
            headers={
                "Authorization": f"Basic {token}",
                "Content-Type": "plain/text; charset=utf-8",
            },
            timeout=TIMEOUT,
        )
        assert response.status_code == 200, response.text

    def configure_device(self, caption: str, type: str) -> None:
        response = self.http.post(
            f"{self.base}/api/2/devices/{self.username}/{self.device}.json",
            data=f'{{"caption":"{caption}","type":"{type}"}}'.encode(),
            headers={"Content-Type": "application/json; charset=utf-8"},
            timeout=TIMEOUT,
        )
        assert response.status_code == 200, response.text

    def subscription_changes(self, since: int) -> dict[str, Any]:
        response = self.http.get(
            f"{self.base}/api/2/subscriptions/{self.username}/{self.device}.json",
            params={"since": since},
            timeout=TIMEOUT,
        )
        assert response.status_code == 200, response.text
        changes = response.json()
        # As GpodnetService reads them: it throws when a key is missing.
        return {
            "add": [url.replace("%3A", ":") for url in changes["add"]],
            "remove": list(changes["remove"]),
            "timestamp": int(changes["timestamp"]),
        }

    def upload_changes(self, added: list[str], removed: list[str]) -> dict[str, Any]:
        response = self.http.post(
            f"{self.base}/api/2/subscriptions/{self.username}/{self.device}.json",
            json={"add": added, "remove": removed},
            headers={"Content-Type": "application/json; charset=utf-8"},
            timeout=TIMEOUT,
        )
        assert response.status_code == 200, response.text
        answer = response.json()
        return {"timestamp": int(answer["timestamp"]), "update_urls": dict(answer["update_urls"])}

    def sync(self, local: set[str], added: list[str], removed: list[str]) -> set[str]:
        """SyncService's subscription round: pull since the last sync, apply it, upload the local
        changes, keep the upload's timestamp. Returns the app's list afterwards."""
        changes = self.subscription_changes(self.last_sync)
        local = (local | set(changes["add"])) - set(changes["remove"])
        self.last_sync = changes["timestamp"]
        if added or removed:
            answer = self.upload_changes(added, removed)
            local = {answer["update_urls"].get(url, url) for url in local | set(added)}
            local -= set(removed)
            self.last_sync = answer["timestamp"]
        return local


class Kasts:
    """Kasts' gpodder requests: Basic every time, no cookie back, since = timestamp + 1."""

    def __init__(self, base: str, username: str, device: str):
        self.base, self.username, self.device = base, username, device
        token = b64encode(f"{username}:{PASSWORD}".encode()).decode()
        self.headers = {"Authorization": f"Basic {token}"}
        self.since = 0

    def request(self, method: str, path: str, body: bytes | None = None) -> requests.Response:
        headers = dict(self.headers)
        if body is not None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"  # Qt's default
        # A new connection and no cookies each time: the most Basic authentications to answer.
        response = requests.request(
            method, f"{self.base}{path}", data=body, headers=headers, timeout=TIMEOUT
        )
        assert response.status_code == 200, response.text
        return response

    def sync(self, added: list[str]) -> list[str]:
        self.request("POST", f"/api/2/auth/{self.username}/login.json", b"")
        self.request(
            "POST",
            f"/api/2/devices/{self.username}/{self.device}.json",
            b'{"caption":"Kasts on my laptop","type":"laptop"}',
        )
        groups = self.request("GET", f"/api/2/sync-devices/{self.username}.json").json()
        assert self.device in groups["synchronized"][0]
        changes = self.request(
            "GET", f"/api/2/subscriptions/{self.username}/{self.device}.json?since={self.since}"
        ).json()
        self.since = changes["timestamp"] + 1
        if added:
            body = ('{"add":[' + ",".join(f'"{url}"' for url in added) + '],"remove":[]}').encode()
            answer = self.request(
                "POST", f"/api/2/subscriptions/{self.username}/{self.device}.json", body
            ).json()
            self.since = answer["timestamp"] + 1
        return list(changes["add"])
