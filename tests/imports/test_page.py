"""The "Your data" page's imports (docs/imports.md): from another server and from a history
file, each queued, run, and told on a page of its own that only its owner sees; the password
used and forgotten."""

import json
import logging
import os
import subprocess
import sys
import time
import unicodedata
from datetime import timedelta
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from core import clock
from episodes.models import EpisodeAction
from imports.models import Import, ImportChunk
from imports.sealed import opened, seal
from tests.imports.batches import third_batch_raises
from tests.imports.standins import PASSWORD, USER, standin
from tests.servers import ROOT


@pytest.fixture
def loopback(settings: Any) -> None:
    settings.IMPORT_ALLOWED_NETWORKS = ["127.0.0.0/8"]


@pytest.fixture
def started(django_capture_on_commit_callbacks: Any) -> Any:
    """POST a form that starts an import, and run what its commit sends (the import, Celery's
    eager mode here), as the request's own commit would."""

    def post(client: Client, path: str, data: dict[str, Any]) -> Any:
        with django_capture_on_commit_callbacks(execute=True):
            return client.post(path, data)

    return post


def download(episode: str) -> dict[str, Any]:
    return {
        "podcast": "https://feeds.example.com/show.xml",
        "episode": episode,
        "action": "download",
        "timestamp": "2014-01-02T03:04:05",
        "device": "phone",
    }


def history(*episodes: int, more: tuple[dict[str, Any], ...] = ()) -> SimpleUploadedFile:
    actions = [download(f"https://cdn.example.com/{n}.mp3") for n in episodes] + list(more)
    body = json.dumps({"actions": actions, "timestamp": 1}).encode()
    return SimpleUploadedFile("gpodder-net.json", body, content_type="application/json")


def test_the_data_page_offers_both_imports(page: Client) -> None:
    text = page.get("/data/").content.decode()
    assert "Import from another server" in text
    assert 'action="/data/import-server/"' in text
    assert 'type="password"' in text
    assert "Import a history file" in text
    assert 'action="/data/import-history/"' in text


@pytest.mark.usefixtures("loopback")
def test_a_server_import_runs_and_tells_its_summary(
    page: Client, person: Any, caplog: Any, started: Any
) -> None:
    with caplog.at_level(logging.DEBUG), standin("mygpo") as server:
        response = started(
            page,
            "/data/import-server/",
            {"server": server.url, "username": USER, "password": PASSWORD, "protocol": "auto"},
        )
        assert response.status_code == 302
        status = page.get(response["Location"])
    text = status.content.decode()
    assert status.status_code == 200
    assert "Imported from the gpodder API at 127.0.0.1" in text
    assert "<dt>Episode actions imported</dt><dd>8</dd>" in text
    assert "<dt>Devices</dt><dd>2</dd>" in text
    assert "data-refresh" not in text  # ended: the page stops asking
    assert EpisodeAction.objects.filter(user=person).count() == 8
    # The password went to the run alone: in no row, no page, no log line.
    upload = Import.objects.get()
    assert PASSWORD not in json.dumps(Import.objects.values().get(), default=str)
    assert USER not in upload.origin
    assert PASSWORD not in text
    assert PASSWORD not in caplog.text


@pytest.mark.usefixtures("loopback")
def test_a_server_that_refuses_is_told_on_the_import_page(
    page: Client, person: Any, started: Any
) -> None:
    with standin("unauthorized") as server:
        response = started(
            page,
            "/data/import-server/",
            {"server": server.url, "username": USER, "password": "x", "protocol": "auto"},
        )
    text = page.get(response["Location"]).content.decode()
    assert "It stopped: the server refused this username and password (HTTP 401)" in text
    assert not EpisodeAction.objects.exists()


def test_a_bad_address_is_told_on_the_form(page: Client) -> None:
    response = page.post(
        "/data/import-server/",
        {"server": "ftp://example.com", "username": "u", "password": "p", "protocol": "auto"},
    )
    assert response.status_code == 400
    assert "enter the server" in response.content.decode()
    assert not Import.objects.exists()


def test_a_history_file_is_imported_and_its_chunks_dropped(
    page: Client, person: Any, started: Any
) -> None:
    response = started(page, "/data/import-history/", {"file": history(1, 2, 3)})
    assert response.status_code == 302
    text = page.get(response["Location"]).content.decode()
    assert "Imported from a gpodder.net episode-actions file" in text
    assert "<dt>Episode actions imported</dt><dd>3</dd>" in text
    assert EpisodeAction.objects.filter(user=person).count() == 3
    assert not ImportChunk.objects.exists()


def test_a_file_that_is_not_a_history_is_told_why(page: Client, started: Any) -> None:
    bad = SimpleUploadedFile("notes.json", b'{"actions": [', content_type="application/json")
    response = started(page, "/data/import-history/", {"file": bad})
    text = page.get(response["Location"]).content.decode()
    assert "It stopped: this is not valid JSON" in text
    assert not EpisodeAction.objects.exists()


def test_a_file_over_the_limit_is_refused_naming_it(page: Client, settings: Any) -> None:
    settings.IMPORT_MAX_FILE_BYTES = 1000
    # Over the limit by more than a form's own fields: refused before it is read.
    far = SimpleUploadedFile("far.json", b"[" + b" " * 100_000 + b"]")
    response = page.post("/data/import-history/", {"file": far})
    assert response.status_code == 413
    assert "IMPORT_MAX_FILE_BYTES" in response.content.decode()
    # Just over: the form says so.
    near = SimpleUploadedFile("near.json", b"[" + b" " * 5000 + b"]")
    response = page.post("/data/import-history/", {"file": near})
    assert response.status_code == 400
    assert "the limit is 1000 bytes (IMPORT_MAX_FILE_BYTES)" in response.content.decode()
    assert not Import.objects.exists()


def test_another_persons_import_is_a_404(page: Client, stranger: Any, started: Any) -> None:
    theirs = Client()
    theirs.force_login(stranger)
    response = started(theirs, "/data/import-history/", {"file": history(1)})
    assert page.get(response["Location"]).status_code == 404
    assert page.get("/data/imports/999999/").status_code == 404
    assert "gpodder-net.json" not in page.get("/data/").content.decode()


@pytest.mark.usefixtures("db")
def test_signed_out_visitors_are_sent_to_sign_in(client: Client) -> None:
    response = client.post("/data/import-history/", {"file": history(1)})
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")
    assert not Import.objects.exists()


def test_one_import_at_a_time_and_a_few_a_day(page: Client, person: Any, settings: Any) -> None:
    Import.objects.create(user=person, source="file", origin="x", created=clock.now())
    response = page.post("/data/import-history/", {"file": history(1)})
    assert response.status_code == 400
    assert "an import of yours is under way" in response.content.decode()
    Import.objects.update(state="done")
    settings.IMPORT_MAX_PER_DAY = 1
    response = page.post("/data/import-history/", {"file": history(1)})
    assert response.status_code == 400
    assert "IMPORT_MAX_PER_DAY" in response.content.decode()


def test_an_import_whose_worker_is_gone_shows_as_stopped(
    page: Client, person: Any, started: Any
) -> None:
    long_ago = clock.now() - timedelta(hours=2)
    upload = Import.objects.create(
        user=person, source="server", origin="https://gpodder.net", state="running",
        created=long_ago, updated=long_ago,
    )  # fmt: skip
    text = page.get(f"/data/imports/{upload.pk}/").content.decode()
    assert "stopped midway" in text
    assert "data-refresh" not in text
    # Started again, it runs: the one that stopped is ended for good.
    response = started(page, "/data/import-history/", {"file": history(1)})
    assert response.status_code == 302, response.content.decode()
    assert Import.objects.get(pk=upload.pk).state == "failed"


def test_the_seal_opens_only_with_this_servers_key(settings: Any) -> None:
    sealed = seal("hunter2")
    assert "hunter2" not in sealed
    assert opened(sealed) == "hunter2"
    settings.SECRET_KEY = "another server's key, long enough to be one"
    assert opened(sealed) is None


@pytest.mark.usefixtures("transactional_db", "loopback")
def test_on_the_home_server_an_import_runs_in_a_thread(
    page: Client, person: Any, settings: Any
) -> None:
    """Without a broker, the page answers at once and the import goes on beside it."""
    settings.IMPORT_IN_THREAD = True
    with standin("mygpo") as server:
        response = page.post(
            "/data/import-server/",
            {"server": server.url, "username": USER, "password": PASSWORD, "protocol": "auto"},
        )
        deadline = time.monotonic() + 30
        while Import.objects.get().state in ("queued", "running"):
            assert time.monotonic() < deadline
            time.sleep(0.1)
    assert Import.objects.get().state == "done"
    assert (
        "<dt>Episode actions imported</dt><dd>8</dd>"
        in page.get(response["Location"]).content.decode()
    )


def test_staff_read_the_imports_in_the_admin(
    admin_client: Client, person: Any, started: Any, page: Client
) -> None:
    started(page, "/data/import-history/", {"file": history(1)})
    listing = admin_client.get("/admin/imports/import/")
    assert listing.status_code == 200
    assert "gpodder-net.json" in listing.content.decode()
    upload = Import.objects.get()
    assert admin_client.get(f"/admin/imports/import/{upload.pk}/change/").status_code == 200
    assert admin_client.get("/admin/imports/import/add/").status_code == 403


def test_the_database_keeps_one_import_under_way_a_person(person: Any) -> None:
    """Two requests at once both pass the check: the second's row is refused all the same."""
    from django.db import IntegrityError, transaction

    Import.objects.create(user=person, source="file", origin="a", created=clock.now())
    with pytest.raises(IntegrityError), transaction.atomic():
        Import.objects.create(user=person, source="file", origin="b", created=clock.now())


def test_a_large_body_is_taken_from_a_person_signed_in_alone(
    page: Client, settings: Any, started: Any
) -> None:
    """Past MAX_PAGE_BODY_BYTES, only a signed-in person's file reaches the form: Django would
    write anyone else's to disk to check its CSRF token."""
    settings.MAX_PAGE_BODY_BYTES = 10_000
    body = {"file": history(*range(200))}
    assert len(body["file"].read()) > 10_000
    body["file"].seek(0)
    anonymous = Client().post("/data/import-history/", body)
    assert anonymous.status_code == 413
    assert "MAX_PAGE_BODY_BYTES" in anonymous.content.decode()
    assert not Import.objects.exists()
    body["file"].seek(0)
    response = started(page, "/data/import-history/", body)
    assert response.status_code == 302
    assert Import.objects.get().actions_imported == 200


def test_a_broker_that_cannot_be_reached_ends_the_import_in_words(
    page: Client, settings: Any, started: Any, monkeypatch: Any
) -> None:
    from imports import tasks

    def unreachable(*args: Any) -> None:
        raise ConnectionError("Error 111 connecting to redis:6379. Connection refused.")

    monkeypatch.setattr(tasks.run_import, "delay", unreachable)
    response = started(page, "/data/import-history/", {"file": history(1)})
    assert response.status_code == 302
    upload = Import.objects.get()
    assert upload.state == "failed"
    assert "the task queue could not be reached" in upload.error
    assert not ImportChunk.objects.exists()


def readable(text: str) -> bool:
    return not any(unicodedata.category(ch) in ("Cc", "Cf", "Cs") for ch in text)


def test_a_refused_action_whose_text_holds_a_nul_is_told_and_the_others_counted(
    page: Client, person: Any, started: Any
) -> None:
    """Its name in the refusals, the episode URL as sent, reached PostgreSQL, which refused
    it: the import ended as "stopped on an error of this server", and its page said 0
    imported although the good actions were written."""
    bad = download("https://cdn.example.com/\x00\x1b[2J.mp3")
    response = started(page, "/data/import-history/", {"file": history(1, 2, more=(bad,))})
    upload = Import.objects.get()
    assert (upload.state, upload.error) == ("done", "")
    assert (upload.actions_imported, upload.refused) == (2, 1)
    [refusal] = upload.refusals
    assert refusal["what"] == "download of https://cdn.example.com/\ufffd\ufffd[2J.mp3"
    assert "episode contains control or invalid characters" in refusal["reason"]
    assert all(readable(text) for text in (refusal["what"], refusal["reason"]))
    text = page.get(response["Location"]).content.decode()
    assert "<dt>Episode actions imported</dt><dd>2</dd>" in text
    assert EpisodeAction.objects.filter(user=person).count() == 2


@pytest.mark.usefixtures("loopback")
@pytest.mark.parametrize(
    ("behaviour", "error"),
    [
        ("nul_status", "the server could not be read (BadStatusLine: HTTP/1.1 2\ufffd00 OK"),
        ("nul_redirect", "another address (http://elsewhere.example/\ufffd\ufffd[31m)"),
    ],
)
def test_a_server_whose_answer_holds_a_nul_ends_the_import_in_words(
    page: Client, person: Any, started: Any, behaviour: str, error: str
) -> None:
    """The import's error quotes what the server sent: a NUL reached PostgreSQL, which refused
    it, and the import was left running, holding the person's next one back for IMPORT_TIMEOUT
    and two minutes more."""
    with standin(behaviour) as server:
        response = started(
            page,
            "/data/import-server/",
            {"server": server.url, "username": USER, "password": PASSWORD, "protocol": "auto"},
        )
    upload = Import.objects.get()
    assert upload.state == "failed"
    assert error in upload.error
    assert readable(upload.error)
    assert error in page.get(response["Location"]).content.decode()
    # Ended: the next import may start at once.
    assert started(page, "/data/import-history/", {"file": history(1)}).status_code == 302


def test_an_import_that_fails_midway_tells_what_it_wrote(
    page: Client, person: Any, started: Any, monkeypatch: Any
) -> None:
    """A failure of this server's own after two batches: ended as failed, its page counting the
    actions those batches wrote (it said 0)."""
    third_batch_raises(monkeypatch, RuntimeError("a bug of this server's"))
    response = started(page, "/data/import-history/", {"file": history(*range(35))})
    upload = Import.objects.get()
    assert upload.state == "failed"
    assert "stopped on an error of this server" in upload.error
    assert (upload.actions_read, upload.actions_imported) == (30, 20)
    assert upload.finished is not None
    assert (
        "<dt>Episode actions imported</dt><dd>20</dd>"
        in page.get(response["Location"]).content.decode()
    )
    assert EpisodeAction.objects.filter(user=person).count() == 20


def test_the_import_task_has_time_limits_of_its_own_past_import_timeout() -> None:
    """It ran under every task's limits, 270 s soft and 300 s hard, though an import may read a
    server for IMPORT_TIMEOUT (600 s) and then write what it read. Its own follow the settings
    it is started with: past IMPORT_TIMEOUT, by a second for every 2,000 actions it may write."""
    code = (
        "import django; django.setup(); "
        "from celery import current_app; from imports.tasks import run_import; "
        "print(run_import.soft_time_limit, run_import.time_limit, current_app.conf.task_time_limit)"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test"}
    found = {}
    for timeout, actions in (("600", "1000000"), ("1500", "20000")):
        result = subprocess.run(
            [sys.executable, "-c", code],
            env={**env, "IMPORT_TIMEOUT": timeout, "IMPORT_MAX_ACTIONS": actions},
            cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
        found[timeout] = tuple(float(n) for n in result.stdout.split())
    assert found["600"] == (1100, 1160, 300)
    assert found["1500"] == (1510, 1570, 300)


def test_an_import_past_its_time_limit_ends_saying_so_with_what_it_wrote(
    page: Client, person: Any, started: Any, monkeypatch: Any
) -> None:
    """The soft limit raises in the run, wherever it is: the batch under way is rolled back,
    and the import ends as failed, in words, counting the batches it wrote."""
    from celery.exceptions import SoftTimeLimitExceeded

    third_batch_raises(monkeypatch, SoftTimeLimitExceeded())
    started(page, "/data/import-history/", {"file": history(*range(35))})
    upload = Import.objects.get()
    assert upload.state == "failed"
    assert upload.error == (
        "the import took longer than 1100 seconds, the most a run may take: start it again, it "
        "adds what is missing"
    )
    assert upload.actions_imported == 20
