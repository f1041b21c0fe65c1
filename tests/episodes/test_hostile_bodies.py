"""The hostile-body corpus, and bodies aimed at the episode actions' checks, against the upload:
never a 500, an error is the error object with 400 or 413, and a refused request stores
nothing."""

import json
from typing import Any

import pytest
from rest_framework.test import APIClient

from episodes.models import EpisodeAction
from gpodder.models import Device
from tests.helpers import assert_error
from tests.hostile import CORPUS

EPISODES = "/api/2/episodes/alice.json"
OK = {"podcast": "https://a.example/feed", "episode": "https://a.example/1.mp3", "action": "new"}

AIMED = {
    "nested deep": b"[" * 100_000 + b"]" * 100_000,
    "object of actions": json.dumps({"actions": [OK]}).encode(),
    "play with huge position": json.dumps([{**OK, "action": "play", "position": 10**40}]).encode(),
    "nan position": b'[{"podcast":"https://a.example/f","episode":"e","action":"play","position":NaN}]',
    "infinite total": b'[{"podcast":"https://a.example/f","episode":"e","action":"play","position":1,"total":1e999}]',
    "nul in episode": json.dumps([{**OK, "episode": "https://a.example/\u0000"}]).encode(),
    "lone surrogate podcast": b'[{"podcast":"https://a.example/\\ud800","episode":"e","action":"new"}]',
    "timestamp year 0": json.dumps([{**OK, "timestamp": "0000-01-01T00:00:00"}]).encode(),
    "timestamp huge offset": json.dumps(
        [{**OK, "timestamp": "2024-01-01T00:00:00+99:00"}]
    ).encode(),
    "timestamp as object": json.dumps([{**OK, "timestamp": {"$date": 1}}]).encode(),
    "device as list": json.dumps([{**OK, "device": ["phone"]}]).encode(),
    "device path traversal": json.dumps([{**OK, "device": "../admin"}]).encode(),
    "action with unicode case": json.dumps([{**OK, "action": "PLAY\u0130"}]).encode(),
    "valid then broken": json.dumps([OK, OK, {**OK, "action": None}]).encode(),
}


@pytest.mark.parametrize(
    "body", [*CORPUS.values(), *AIMED.values()], ids=[*CORPUS.keys(), *AIMED.keys()]
)
def test_hostile_body_is_refused_with_the_error_object_and_stores_nothing(
    app: APIClient, alice: Any, body: bytes
) -> None:
    response = app.post(EPISODES, data=body, content_type="application/x-www-form-urlencoded")

    assert response.status_code < 500, response.content[:300]
    if response.status_code == 200:
        # A body the corpus means as harmless that reads as a list of no actions.
        assert response.json()["update_urls"] == []
        assert not EpisodeAction.objects.exists()
        return
    assert_error(response, response.status_code)
    assert response.status_code in (400, 413)
    assert not EpisodeAction.objects.exists()
    assert not Device.objects.exists()


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ("since=1e10", "since"),
        ("since=0x10", "since"),
        ("podcast=%00", "podcast"),
        ("podcast=https://a.example/" + "x" * 5000, "podcast"),
        ("device=%ED%A0%80", "device"),  # a lone surrogate, UTF-8 encoded
        ("device=%FF", "device"),
        ("device=" + "d" * 100, "device"),
        ("aggregated=maybe", "aggregated"),
    ],
)
def test_a_hostile_query_is_a_400_naming_the_parameter(app, alice, query, name):
    body = assert_error(app.get(f"{EPISODES}?{query}"), 400)
    assert name in body["message"]
