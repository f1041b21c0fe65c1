"""Every item of an import is bounded while it is read (docs/imports.md, "Bad files and bad
items"): an episode action, a device or a subscription past its bound is refused with the reason
and never built, nor is a key no import reads, from a file as from another server; a value too
long to step past stops the import in words. Nothing is left running."""

import contextlib
import json
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from episodes.models import EpisodeAction
from imports.models import Import
from tests.imports.standins import PASSWORD, USER, standin

MiB = 1024 * 1024
ACTIONS_PATH = f"/api/2/episodes/{USER}.json"
DEVICES_PATH = f"/api/2/devices/{USER}.json"
SUBSCRIPTIONS_PATH = f"/api/2/subscriptions/{USER}/n900.json"
FEED = "https://feeds.example.com/show.xml"
HUGE_ACTION = (
    "this holds an episode action larger than one can be (number 1: at most 256 keys and "
    "values, 65,536 characters)"
)


@pytest.fixture
def loopback(settings: Any) -> None:
    settings.IMPORT_ALLOWED_NETWORKS = ["127.0.0.0/8"]


def action(n: int, **more: Any) -> dict[str, Any]:
    return {
        "podcast": FEED,
        "episode": f"https://cdn.example.com/{n}.mp3",
        "action": "download",
        "timestamp": "2014-01-02T03:04:05",
        "device": "phone",
        **more,
    }


def one_huge_action(size: int) -> bytes:
    """The finding's file: one action with a key no import reads, a list of empty objects that
    fills it to `size` bytes (5.6 million of them in 16 MiB). Its timestamp 0: a server's answer
    is one page (the next would start at 0 again)."""
    opening = b'{"actions": [' + json.dumps(action(1)).encode()[:-1] + b', "x": ['
    closing = b']}], "timestamp": 0}'
    count = (size - len(opening) - len(closing) + 1) // 3
    items = b",".join([b"{}"] * count)
    return opening + items + b" " * (size - len(opening) - len(items) - len(closing)) + closing


@contextlib.contextmanager
def peak_growth() -> Iterator[list[int]]:
    """The most memory the code in the block held at once beyond what it started with, in
    bytes (one item appended to the list yielded, at the end).

    tracemalloc's peak: every allocation of Python's, of each thread (the stand-in server's
    too, which sends bodies made before), counted from the block's start. The process's
    ru_maxrss would be the high-water mark of everything the test process ran before, which
    hides a growth below it; and what the allocator keeps or returns to the system. What the
    finding saw grow is Python's objects, which tracemalloc counts exactly. It does not count
    the JSON parser's own buffer (C's malloc), which holds at most one value, MAX_VALUE_BYTES."""
    tracemalloc.start()
    found: list[int] = []
    try:
        yield found
        found.append(tracemalloc.get_traced_memory()[1])
    finally:
        tracemalloc.stop()


def run_measured(django_capture_on_commit_callbacks: Any, post: Any) -> int:
    """Start an import (the form's POST, not measured: the upload is the web process's), then
    run it (what its commit sends, the import's run): the run's peak memory growth."""
    with django_capture_on_commit_callbacks() as sent:
        response = post()
    assert response.status_code == 302, response.content.decode()[:500]
    with peak_growth() as peak:
        for callback in sent:
            callback()
    return peak[0]


def refused(upload: Import) -> str:
    """The import's end: failed, nothing written; its reason."""
    assert upload.state == "failed"
    assert (upload.actions_imported, upload.podcasts_added) == (0, 0)
    assert not EpisodeAction.objects.exists()
    return upload.error


def test_a_file_of_one_huge_action_is_refused_within_the_memory_it_started_with(
    page: Client, person: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """F19: the action was built whole, 5.6 million dicts, about 400 MB more at its peak."""
    body = one_huge_action(16 * MiB)
    assert len(body) == 16 * MiB
    upload = SimpleUploadedFile("history.json", body, content_type="application/json")
    peak = run_measured(
        django_capture_on_commit_callbacks,
        lambda: page.post("/data/import-history/", {"file": upload}),
    )
    assert peak < 50 * MiB, f"{peak / MiB:.0f} MiB"
    assert refused(Import.objects.get()) == HUGE_ACTION


@pytest.mark.usefixtures("loopback")
def test_a_server_answering_one_huge_action_is_refused_within_the_memory_it_started_with(
    page: Client, person: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with standin("mygpo") as server:
        server.bodies[ACTIONS_PATH] = one_huge_action(16 * MiB)
        form = {"server": server.url, "username": USER, "password": PASSWORD, "protocol": "auto"}
        peak = run_measured(
            django_capture_on_commit_callbacks,
            lambda: page.post("/data/import-server/", form),
        )
    assert peak < 50 * MiB, f"{peak / MiB:.0f} MiB"
    assert refused(Import.objects.get()) == f"the server's episode actions: {HUGE_ACTION}"


# --- other shapes of the same attack, each told in words ---------------------------------------


def action_with(**fields: Any) -> bytes:
    return json.dumps({"actions": [action(1, **fields)], "timestamp": 0}).encode()


# More spellings than a device of an export may hold (three parts each: an object, its key and
# its value).
SPELLINGS = [{"url": "u"}] * 100_000
HUGE_VALUE = "this holds a value (a string, a number or blank space) longer than 1,048,576 bytes"


@pytest.fixture
def run(django_capture_on_commit_callbacks: Any, page: Client) -> Any:
    """POST a form that starts an import, run it, and read its page: the import."""

    def post(path: str, data: dict[str, Any]) -> Import:
        with django_capture_on_commit_callbacks(execute=True):
            response = page.post(path, data)
        assert response.status_code == 302, response.content.decode()[:500]
        assert page.get(response["Location"]).status_code == 200
        upload = Import.objects.get()
        assert upload.state in ("done", "failed")  # never left under way
        return upload

    return post


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b'{"actions": [' + b"[" * 100_000, "this nests deeper than 16 levels"),
        (action_with(episode="x" * (2 * MiB)), HUGE_VALUE),
        (action_with(podcast=" " * 100_000), HUGE_ACTION),
        (b'{"actions": [{"position": ' + b"9" * 5000 + b"}]}", "integer overflow"),
        (b'{"actions": [{"position": ' + b"9" * (2 * MiB) + b"}]}", HUGE_VALUE),
        (action_with(**{f"k{n}": n for n in range(1000)}), HUGE_ACTION),
        (b'{"actions": [{"x": ' + b" " * (3 * MiB) + b"1}]}", HUGE_VALUE),
        (
            json.dumps({"devices": [{"id": "phone", "feed_url_spellings": SPELLINGS}]}),
            "this holds a device larger than one can be (number 1: at most 262,144 keys and "
            "values, 4,194,304 characters)",
        ),
        (
            json.dumps({"subscriptions": [{"feed_url": FEED, "feed_url_history": [{}] * 10**5}]}),
            "this holds a subscription larger than one can be (number 1: at most 65,536 keys and "
            "values, 1,048,576 characters)",
        ),
    ],
    ids=[
        "deep", "long-string", "long-known-field", "long-number", "huger-number", "many-keys",
        "blank-space", "export-device", "export-subscription",
    ],
)  # fmt: skip
def test_a_file_of_another_huge_shape_is_refused_in_words(
    run: Any, body: bytes | str, error: str
) -> None:
    data = body.encode() if isinstance(body, str) else body
    upload = run("/data/import-history/", {"file": SimpleUploadedFile("h.json", data)})
    assert error in refused(upload)


@pytest.mark.usefixtures("loopback")
@pytest.mark.parametrize(
    ("path", "body", "error"),
    [
        (DEVICES_PATH, [{"id": "n900", "x": [{}] * 100_000}],
         "the server's device list: this holds a device larger than one can be (number 1: at "
         "most 256 keys and values, 65,536 characters)"),
        (DEVICES_PATH, [{"id": "n900", "caption": "x" * (2 * MiB)}],
         f"the server's device list: {HUGE_VALUE}"),
        (DEVICES_PATH, b"[" * 100_000, "the server's device list: this nests deeper than 16"),
        (DEVICES_PATH, {"id": "n900"}, "the server's device list is not a list"),
        (SUBSCRIPTIONS_PATH, {"add": ["https://feeds.example.com/" + "a" * 20_000]},
         "the server's device's subscriptions: this holds a subscription larger than one can be "
         "(number 1: at most 16,384 characters)"),
        (SUBSCRIPTIONS_PATH, {"add": ["x" * (2 * MiB)]},
         f"the server's device's subscriptions: {HUGE_VALUE}"),
        (SUBSCRIPTIONS_PATH, {"add": {"x": 1}}, 'is not {"add": [...], ...}'),
        (ACTIONS_PATH, {"actions": [], "timestamp": "1" * (2 * MiB)},
         f"the server's episode actions: {HUGE_VALUE}"),
    ],
    ids=[
        "device", "device-caption", "deep", "not-a-list", "subscription", "subscription-value",
        "add-not-a-list", "timestamp",
    ],
)  # fmt: skip
def test_a_server_answering_another_huge_shape_is_refused_in_words(
    run: Any, path: str, body: Any, error: str
) -> None:
    with standin("mygpo") as server:
        server.bodies[path] = body if isinstance(body, bytes) else json.dumps(body).encode()
        form = {"server": server.url, "username": USER, "password": PASSWORD, "protocol": "auto"}
        upload = run("/data/import-server/", form)
    assert error in refused(upload)


@pytest.mark.usefixtures("loopback")
def test_what_no_import_reads_of_a_server_is_read_past_not_held(run: Any, settings: Any) -> None:
    """A subscription answer's `remove`, a device list of 300,000 devices past MAX_DEVICES:
    read past, nothing of them held, the import done; the devices past the limit named, as many
    again, and the rest counted."""
    settings.MAX_DEVICES = 2
    devices = [{"id": "n900"}, {"id": "desktop"}] + [{"id": "x"}] * 300_000
    with standin("mygpo") as server:
        server.bodies[DEVICES_PATH] = json.dumps(devices).encode()
        server.bodies[SUBSCRIPTIONS_PATH] = json.dumps(
            {"add": [FEED], "remove": [{}] * 1_000_000}
        ).encode()
        form = {"server": server.url, "username": USER, "password": PASSWORD, "protocol": "auto"}
        with peak_growth() as peak:
            upload = run("/data/import-server/", form)
    assert peak[0] < 50 * MiB, f"{peak[0] / MiB:.0f} MiB"
    assert upload.state == "done", upload.error
    assert upload.devices == 2
    assert upload.podcasts_added == 1
    assert [r["what"] for r in upload.refusals] == [
        "device 'x'",
        "device 'x'",
        "299,998 more devices",
    ]
