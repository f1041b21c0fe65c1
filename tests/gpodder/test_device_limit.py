"""MAX_DEVICES (docs/gpodder-api.md, "Devices"): an account holds at most so many devices. Every
request that would make one more is a 400 naming the limit and stores nothing; the devices it
has work on; and requests racing at the limit never take the account past it (real threads on
PostgreSQL)."""

import json
import time
from functools import partial
from typing import Any

import pytest
from rest_framework.test import APIClient

from episodes.models import EpisodeAction
from gpodder import services
from gpodder.models import Device, DeviceFeed
from subscriptions.models import Subscription
from tests.helpers import assert_error, at_once, basic, subscribe

LIMIT = 3


def snapshot() -> list[Any]:
    models = (Device, DeviceFeed, Subscription, EpisodeAction)
    return [list(model.objects.order_by("pk").values()) for model in models]


def action(device: str | None) -> dict[str, Any]:
    return {
        "podcast": "https://podnews.net/rss",
        "episode": "https://podnews.net/1.mp3",
        "action": "download",
        "device": device,
    }


@pytest.fixture
def full(alice: Any, settings: Any) -> Any:
    """alice has LIMIT devices, the most she may have."""
    settings.MAX_DEVICES = LIMIT
    for n in range(LIMIT):
        services.device_touch(user=alice, device_id=f"d{n}")
    subscribe(alice, "https://example.com/mine.xml")
    return alice


# Every request that names a device creates it when it is new.
NAMING = {
    "pull": ("get", "/api/2/subscriptions/alice/new.json?since=0", None),
    "upload": ("post", "/api/2/subscriptions/alice/new.json", {"add": ["https://a.example/x"]}),
    "device settings": ("post", "/api/2/devices/alice/new.json", {"caption": "New"}),
    "simple get": ("get", "/subscriptions/alice/new.opml", None),
    "simple put": ("put", "/subscriptions/alice/new.json", ["https://a.example/x"]),
    "episode upload": ("post", "/api/2/episodes/alice.json", [action("new")]),
}


@pytest.mark.parametrize("request_", NAMING)
def test_a_request_naming_one_device_too_many_is_a_400_naming_the_limit_and_stores_nothing(
    app: APIClient, full: Any, request_: str
) -> None:
    method, path, body = NAMING[request_]
    before = snapshot()
    sent = {} if body is None else {"data": json.dumps(body), "content_type": "application/json"}

    response = getattr(app, method)(path, **sent)

    told = assert_error(response, 400)["message"]
    assert "MAX_DEVICES" in told
    assert f"{LIMIT} devices" in told
    assert snapshot() == before


def test_the_devices_an_account_has_work_on_at_the_limit(
    app: APIClient, full: Any, bob: Any
) -> None:
    assert app.get("/api/2/subscriptions/alice/d0.json?since=0").status_code == 200
    response = app.post("/api/2/devices/alice/d1.json", {"type": "mobile"}, format="json")
    assert response.status_code == 200
    response = app.post("/api/2/episodes/alice.json", [action("d2"), action(None)], format="json")
    assert response.status_code == 200, response.content
    assert EpisodeAction.objects.count() == 2
    assert Device.objects.filter(user=full).count() == LIMIT
    # Another account's devices are counted apart.
    other = APIClient(HTTP_AUTHORIZATION=basic("bob"))
    assert other.get("/api/2/subscriptions/bob/new.json?since=0").status_code == 200


def test_removing_a_device_makes_room_for_one(app: APIClient, full: Any) -> None:
    services.device_remove(user=full, device_id="d0")
    assert app.get("/api/2/subscriptions/alice/new.json?since=0").status_code == 200
    assert_error(app.get("/api/2/subscriptions/alice/newer.json?since=0"), 400)
    assert sorted(Device.objects.values_list("device_id", flat=True)) == ["d1", "d2", "new"]


def test_an_episode_upload_naming_more_new_devices_than_there_is_room_for_stores_none(
    app: APIClient, full: Any
) -> None:
    services.device_remove(user=full, device_id="d0")  # room for one
    before = snapshot()
    response = app.post(
        "/api/2/episodes/alice.json", [action("one"), action("two"), action("d1")], format="json"
    )
    assert "MAX_DEVICES" in assert_error(response, 400)["message"]
    assert snapshot() == before


# --- Racing at the limit -----------------------------------------------------------------------

RACERS = 8


@pytest.mark.usefixtures("transactional_db")
def test_requests_racing_at_the_limit_never_pass_it(
    alice: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.MAX_DEVICES = 5
    for n in range(4):
        services.device_touch(user=alice, device_id=f"d{n}")
    # Each request dawdles just before it adds its device: without a lock held from the count
    # to the insert, every one of them would count 4 and add one.
    manager = Device.objects
    add = manager.bulk_create

    def slow_add(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.2)
        return add(*args, **kwargs)

    monkeypatch.setattr(manager, "bulk_create", slow_add)

    def pull(device: str) -> tuple[int, str]:
        client = APIClient(HTTP_AUTHORIZATION=basic("alice"))
        client.raise_request_exception = False
        response = client.get(f"/api/2/subscriptions/alice/{device}.json?since=0")
        return response.status_code, response.content.decode()

    results = at_once(*[partial(pull, f"new-{n}") for n in range(RACERS)])

    statuses = sorted(status for status, _ in results)
    assert statuses == [200] + [400] * (RACERS - 1), results
    assert all("MAX_DEVICES" in body for status, body in results if status == 400)
    assert Device.objects.filter(user=alice).count() == 5


@pytest.mark.usefixtures("transactional_db")
def test_first_requests_of_one_new_device_at_the_limit_all_succeed(
    alice: Any, settings: Any
) -> None:
    """Two first requests of the same new device, with room for it: the one that comes second
    finds it made, and is not refused as if it were one more."""
    settings.MAX_DEVICES = 5
    for n in range(4):
        services.device_touch(user=alice, device_id=f"d{n}")

    def pull() -> int:
        client = APIClient(HTTP_AUTHORIZATION=basic("alice"))
        client.raise_request_exception = False
        return client.get("/api/2/subscriptions/alice/phone.json?since=0").status_code

    assert at_once(*[pull for _ in range(RACERS)]) == [200] * RACERS
    assert Device.objects.filter(user=alice).count() == 5
