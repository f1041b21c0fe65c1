"""The fast path answers exactly as the views do: every hot request and the odd ones, sent by
two accounts in step, one with the fast path off and one with it on, give the same status,
headers and bytes; and the counter shows which requests the fast path answered itself.

On PostgreSQL here, and on SQLite in make test's home slice."""

import json
from base64 import b64encode
from http.cookies import SimpleCookie
from typing import Any

import pytest
from rest_framework.test import APIClient

from fastpath import middleware
from tests.factories import UserFactory
from tests.helpers import PASSWORD, client_for, subscribe

U = "{user}"
FEED = "http://feeds.example/caf%C3%A9?x=1&y=%22q%22"
UNICODE = "https://例え.jp/ポッドキャスト/feed.xml"
ESCAPES = 'http://feeds.example/a"b\\c\u2028d'

PLAY = {
    "podcast": UNICODE,
    "episode": "https://例え.jp/ep1.mp3",
    "action": "play",
    "timestamp": "2024-02-23T13:59:00",
    "started": 0,
    "position": 120,
    "total": 3600,
    "device": "phone",
    "guid": "guid-Ω",
}
DOWNLOAD = {"podcast": ESCAPES, "episode": "http://e.example/2.mp3", "action": "download"}


def dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode()


PULL = f"/api/2/subscriptions/{U}/phone.json"
MANY = "&".join(f"x{i}=1" for i in range(1001))  # past Django's DATA_UPLOAD_MAX_NUMBER_FIELDS
EPISODES = f"/api/2/episodes/{U}.json"

# (method, path, body, extra headers, answered by the fast path when it is on)
STEPS: list[tuple[str, str, bytes | None, dict[str, str], bool]] = [
    ("GET", f"{PULL}?since=0", None, {}, True),
    ("POST", PULL, dumps({"add": [FEED, UNICODE, ESCAPES], "remove": []}), {}, True),
    ("GET", f"{PULL}?since=0", None, {}, True),
    ("GET", f"{PULL}?since=0&other=1", None, {}, True),
    ("POST", PULL, dumps({"add": [], "remove": [ESCAPES]}), {}, True),
    ("GET", f"{PULL}?since=1", None, {}, True),
    ("POST", EPISODES, dumps([PLAY, DOWNLOAD]), {}, True),
    ("POST", EPISODES, dumps([PLAY]), {}, True),  # sent again: stored once
    ("GET", f"{EPISODES}?since=0", None, {}, True),
    ("GET", EPISODES, None, {}, True),
    ("GET", f"{EPISODES}?since=1700000000", None, {}, True),
    # What the fast path passes on, each answered by the view.
    ("GET", PULL, None, {}, False),  # since is required
    ("GET", f"{PULL}?since=abc", None, {}, False),
    ("GET", f"{PULL}?since=-1", None, {}, False),
    ("GET", f"{PULL}?since=1&since=2", None, {}, False),
    ("GET", f"{PULL}?since=99999999999999999999999", None, {}, False),
    ("GET", "/api/2/subscriptions/{user}/bad%20device.json?since=0", None, {}, False),
    ("GET", "/api/2/subscriptions/somebody/phone.json?since=0", None, {}, False),
    ("GET", "/api/2/episodes/somebody.json", None, {}, False),
    ("POST", PULL, b"", {}, False),
    ("POST", PULL, b"{not json", {}, False),
    ("POST", PULL, b"null", {}, False),
    # A URL that cannot be used is no refusal: the answer's update_urls tell it.
    ("POST", PULL, dumps({"add": ["http://x.example/\x00"], "remove": []}), {}, True),
    ("POST", PULL, dumps({"add": [FEED], "remove": [FEED]}), {}, False),
    ("POST", PULL, dumps({"add": "http://x.example/", "remove": []}), {}, False),
    ("POST", EPISODES, b"", {}, False),
    ("POST", EPISODES, b"{}", {}, False),
    ("POST", EPISODES, b"[1]", {}, False),
    ("POST", EPISODES, dumps([{**PLAY, "position": None}]), {}, False),
    ("POST", EPISODES, dumps([{**PLAY, "podcast": "http://x.example/\x00"}]), {}, False),
    ("POST", EPISODES, b"[" * 5000, {}, False),
    ("GET", f"{EPISODES}?since=x", None, {}, False),
    ("GET", f"{EPISODES}?since=0&aggregated=true", None, {}, False),
    ("GET", f"{EPISODES}?podcast={UNICODE}", None, {}, False),
    ("GET", f"{EPISODES}?device=phone", None, {}, False),
    ("GET", f"{PULL}?since=0", None, {"HTTP_ORIGIN": "http://elsewhere.example"}, False),
    ("GET", f"{PULL}?since=0", None, {"HTTP_ACCEPT": "text/html"}, False),
    ("PUT", PULL, b"{}", {}, False),
    ("HEAD", f"{PULL}?since=0", None, {}, False),
    ("DELETE", EPISODES, None, {}, False),
    ("GET", f"{EPISODES}?{MANY}", None, {}, False),
    ("GET", f"{PULL}?since=0&{MANY}", None, {}, False),
]


def _login(username: str) -> APIClient:
    client = APIClient()
    token = b64encode(f"{username}:{PASSWORD}".encode()).decode()
    response = client.post(
        f"/api/2/auth/{username}/login.json", HTTP_AUTHORIZATION=f"Basic {token}"
    )
    assert response.status_code == 200
    return client


def _send(client: APIClient, username: str, step: tuple[Any, ...]) -> Any:
    method, path, body, headers, _ = step
    path = path.replace(U, username)
    if "HTTP_AUTHORIZATION" in headers:  # other credentials than the app's, with no cookie
        client = APIClient()
    kwargs: dict[str, Any] = dict(headers)
    if body is not None:
        kwargs.update(data=body, content_type="application/json; charset=utf-8")
    return client.generic(method, path, **kwargs)


def _cookies(response: Any) -> dict[str, dict[str, Any]]:
    """The cookies an answer sets, each with its attributes but not its value (a session's key,
    a value signed for its user)."""
    cookies = SimpleCookie()
    for value in response.cookies.values():
        cookies.load(value.OutputString())
    return {name: {k: v for k, v in morsel.items() if v} for name, morsel in cookies.items()}


def _shown(response: Any) -> tuple[int, dict[str, str], bytes]:
    headers = {k: v for k, v in response.headers.items() if k.lower() != "set-cookie"}
    content = b"".join(response.streaming_content) if response.streaming else response.content
    return response.status_code, headers, content


@pytest.mark.parametrize("kasts", [False, True], ids=["cookie", "basic-and-cookie"])
def test_every_request_answers_the_same_on_and_off(
    db: None, settings: Any, clock: Any, kasts: bool
) -> None:
    UserFactory(username="off", with_password=PASSWORD)
    UserFactory(username="on", with_password=PASSWORD)
    off, on = _login("off"), _login("on")
    if kasts:  # Basic on every request, beside the cookie its first one set
        for client, name in ((off, "off"), (on, "on")):
            token = b64encode(f"{name}:{PASSWORD}".encode()).decode()
            client.credentials(HTTP_AUTHORIZATION=f"Basic {token}")
    for step in STEPS:
        settings.FAST_PATH = False
        before = middleware.answered.total()
        expected = _send(off, "off", step)
        assert middleware.answered.total() == before
        settings.FAST_PATH = True
        answered = _send(on, "on", step)
        taken = middleware.answered.total() - before
        assert taken == int(step[-1]), step
        assert _shown(answered) == _shown(expected), step
        assert _cookies(answered) == _cookies(expected), step
        assert answered.status_code < 500, step


NC = "/index.php/apps/gpoddersync"
NEXTCLOUD_STEPS: list[tuple[str, str, bytes | None, dict[str, str], bool]] = [
    ("GET", f"{NC}/subscriptions?since=0", None, {}, True),
    (
        "POST",
        f"{NC}/subscription_change/create",
        dumps({"add": [FEED, UNICODE], "remove": []}),
        {},
        True,
    ),
    ("GET", "/apps/gpoddersync/subscriptions", None, {}, True),
    ("POST", f"{NC}/subscription_change/create/", dumps({"add": [], "remove": [FEED]}), {}, True),
    ("GET", f"{NC}/subscriptions?since=1", None, {}, True),
    ("POST", f"{NC}/episode_action/create", dumps([PLAY, DOWNLOAD]), {}, True),
    ("GET", f"{NC}/episode_action?since=0", None, {}, True),
    ("GET", f"{NC}/episode_action", None, {}, True),
    ("GET", f"{NC}/subscriptions?since=x", None, {}, False),
    ("POST", f"{NC}/subscription_change/create", b"", {}, False),
    ("POST", f"{NC}/subscription_change/create", b"[]", {}, False),
    ("POST", f"{NC}/episode_action/create", b"", {}, False),
    ("POST", f"{NC}/episode_action/create", b"{broken", {}, False),
    ("POST", f"{NC}/episode_action/create", dumps([{**PLAY, "action": "stop"}]), {}, False),
    ("GET", f"{NC}/episode_action?since=0", None, {"HTTP_SEC_FETCH_SITE": "cross-site"}, False),
    ("GET", f"{NC}/subscriptions", None, {"HTTP_AUTHORIZATION": "Basic bm9ib2R5Onh4"}, False),
    ("GET", f"{NC}/subscriptions", None, {"HTTP_AUTHORIZATION": "Bearer x"}, False),
    ("DELETE", f"{NC}/subscriptions", None, {}, False),
]


def test_the_nextcloud_paths_answer_the_same_on_and_off(
    db: None, settings: Any, clock: Any
) -> None:
    clients = {}
    for name in ("off", "on"):
        UserFactory(username=name, with_password=PASSWORD)
        client = APIClient()
        token = b64encode(f"{name}:{PASSWORD}".encode()).decode()
        client.credentials(HTTP_AUTHORIZATION=f"Basic {token}")
        # Its first request is the view's, which verifies the password.
        assert client.get(f"{NC}/subscriptions").status_code == 200
        clients[name] = client
    _in_step(settings, clients, NEXTCLOUD_STEPS)


def _in_step(settings: Any, clients: dict[str, APIClient], steps: list[tuple[Any, ...]]) -> None:
    """Each step sent by the "off" client with the fast path off, then by the "on" client with
    it on: the same answer, and the fast path answered the steps it should."""
    for step in steps:
        settings.FAST_PATH = False
        before = middleware.answered.total()
        expected = _send(clients["off"], "off", step)
        settings.FAST_PATH = True
        answered = _send(clients["on"], "on", step)
        assert middleware.answered.total() - before == int(step[-1]), step
        assert _shown(answered) == _shown(expected), step
        assert _cookies(answered) == _cookies(expected), step
        assert answered.status_code < 500, step


GUID = "6f1d1c0e-8a5b-4c3e-9d2f-0a1b2c3d4e5f"
ONE = f"/v1/subscriptions/{GUID}"
LIST = "/v1/subscriptions"
# Beside ONE, on both accounts under the same guids: a list of three, in pages of two.
OTHERS = {
    FEED: "0b6a3f4e-2c1d-4e5f-8a9b-1c2d3e4f5a6b",
    "http://feeds.example/a%22b%5Cc?q=%E2%80%A8": "1c7b4a5f-3d2e-4f6a-9b8c-2d3e4f5a6b7c",
}
V1_STEPS: list[tuple[str, str, bytes | None, dict[str, str], bool]] = [
    ("GET", ONE, None, {}, True),
    ("GET", ONE.upper().replace("/V1/SUBSCRIPTIONS/", "/v1/subscriptions/"), None, {}, True),
    ("GET", f"{ONE}?unknown=1", None, {}, True),
    ("GET", ONE, None, {"HTTP_ACCEPT": "application/json"}, True),
    ("HEAD", ONE, None, {}, True),
    ("GET", LIST, None, {}, True),
    ("GET", f"{LIST}?per_page=2", None, {}, True),
    ("GET", f"{LIST}?per_page=2&page=2", None, {}, True),
    ("GET", f"{LIST}?page=9", None, {}, True),  # past the end: "previous" leads back
    ("GET", f"{LIST}?since=2020-01-01T00:00:00Z&per_page=1", None, {}, True),
    ("GET", f"{LIST}?since=2999-01-01T00:00:00%2B02:00", None, {}, True),
    ("GET", f"{LIST}?per_page=1", None, {"HTTP_ACCEPT": "application/json"}, True),
    ("HEAD", LIST, None, {}, True),
    # What the fast path passes on, each answered by the view.
    ("GET", f"{LIST}?unknown=1", None, {}, False),
    ("GET", f"{LIST}?page=0", None, {}, False),
    ("GET", f"{LIST}?page=x", None, {}, False),
    ("GET", f"{LIST}?per_page=100000", None, {}, False),
    ("GET", f"{LIST}?page=1&page=2", None, {}, False),
    ("GET", f"{LIST}?since=yesterday", None, {}, False),
    ("GET", f"{LIST}?since=%00", None, {}, False),
    ("GET", LIST, None, {"HTTP_ACCEPT": "text/html"}, False),
    ("GET", LIST, None, {"HTTP_AUTHORIZATION": "Bearer not.a.token"}, False),
    ("GET", f"{LIST}?{MANY}", None, {}, False),
    ("POST", LIST, dumps({"subscriptions": []}), {}, False),
    ("GET", "/v1/subscriptions/00000000-0000-4000-8000-000000000000", None, {}, False),
    ("GET", "/v1/subscriptions/not-a-guid", None, {}, False),
    ("GET", "/v1/subscriptions/%00", None, {}, False),
    ("GET", ONE, None, {"HTTP_ACCEPT": "text/html"}, False),
    ("GET", ONE, None, {"HTTP_ACCEPT": "application/json; q=0.9"}, False),
    ("GET", f"{ONE}?format=json", None, {}, False),
    ("GET", ONE, None, {"HTTP_ORIGIN": "http://elsewhere.example"}, False),
    ("GET", ONE, None, {"HTTP_AUTHORIZATION": "Bearer not.a.token"}, False),
    ("GET", ONE, None, {"HTTP_AUTHORIZATION": "Bearer"}, False),
    ("GET", ONE, None, {"HTTP_AUTHORIZATION": "Basic bm9ib2R5Onh4"}, False),
    ("PATCH", ONE, dumps({"title": "x"}), {}, False),
    ("GET", f"{ONE}?{MANY}", None, {}, False),
]


def test_v1_get_one_and_the_list_answer_the_same_on_and_off(
    db: None, settings: Any, clock: Any
) -> None:
    """Two accounts with the same subscriptions under the same guids, each app with its token."""
    clients = {}
    for name in ("off", "on"):
        user = UserFactory(username=name, with_password=PASSWORD)
        subscribe(user, UNICODE, guid=GUID)
        for feed, guid in OTHERS.items():
            subscribe(user, feed, guid=guid)
        clients[name] = client_for(user)
        # Its first request is the view's, which verifies the token.
        assert clients[name].get(ONE).status_code == 200
    _in_step(settings, clients, V1_STEPS)
