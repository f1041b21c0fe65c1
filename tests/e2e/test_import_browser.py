"""Importing a history in a real browser (docs/imports.md): the "Your data" page's form for
another server, filled and sent as a person would, the import's page while it runs and once it
is done; and a history file, chosen and sent. Every page passes axe-core at a laptop's width and
at 390 and 320 px without scrolling sideways; the screenshots are saved under
TEST_OUTPUT_DIR/e2e/ (import-form-*.png, import-progress-*.png, import-summary-*.png)."""

import json
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from episodes.models import EpisodeAction
from tests.e2e.browser import main_text
from tests.e2e.test_devices_browser import checked
from tests.factories import UserFactory
from tests.helpers import wait_until
from tests.imports.standins import PASSWORD as THEIR_PASSWORD
from tests.imports.standins import USER as THEIR_USER
from tests.imports.standins import standin

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("transactional_db", "plain_http_cookies")]

PASSWORD = "a long and unusual passphrase 41"


@pytest.fixture(autouse=True)
def _home_server_imports(settings: Any) -> None:
    """As the home server runs them: in a thread beside the page; the stand-in on loopback."""
    settings.IMPORT_IN_THREAD = True
    settings.IMPORT_ALLOWED_NETWORKS = ["127.0.0.0/8"]


def signed_in(browser: WebDriver, base: str) -> None:
    UserFactory(username="alice", with_password=PASSWORD)
    browser.get(f"{base}/login/")
    browser.find_element(By.NAME, "username").send_keys("alice")
    browser.find_element(By.NAME, "password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "main button[type=submit]").click()
    wait_until(lambda: "/podcasts/" in browser.current_url, 20, "the signed-in page")


def test_a_person_imports_from_another_server_and_reads_the_summary(
    live_server: Any, browser: WebDriver
) -> None:
    signed_in(browser, live_server.url)
    found = checked(browser, live_server.url, "/data/", "import-form")
    with standin("mygpo_slow") as server:
        browser.get(f"{live_server.url}/data/")
        form = browser.find_element(By.CSS_SELECTOR, "form[action='/data/import-server/']")
        form.find_element(By.NAME, "server").send_keys(server.url)
        form.find_element(By.NAME, "username").send_keys(THEIR_USER)
        form.find_element(By.NAME, "password").send_keys(THEIR_PASSWORD)
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        wait_until(lambda: "/data/imports/" in browser.current_url, 20, "the import's page")
        path = browser.current_url.removeprefix(live_server.url)
        # Under way (the server takes its time over the actions): told, and followed.
        assert "this page updates by itself" in main_text(browser)
        found += checked(browser, live_server.url, path, "import-progress")
        browser.get(live_server.url + path)
        # The page follows the import by itself, to its end.
        wait_until(lambda: "Imported from" in main_text(browser), 30, "the import's end")
    text = main_text(browser)
    assert "Imported from the gpodder API at 127.0.0.1" in text
    assert "Episode actions imported\n8" in text or "Episode actions imported 8" in text
    assert THEIR_PASSWORD not in browser.page_source
    found += checked(browser, live_server.url, path, "import-summary")
    assert EpisodeAction.objects.count() == 8
    assert not found, "\n".join(found)


def test_a_person_imports_a_history_file(
    live_server: Any, browser: WebDriver, tmp_path: Path
) -> None:
    signed_in(browser, live_server.url)
    saved = tmp_path / "gpodder-net-episodes.json"
    saved.write_text(
        json.dumps(
            {
                "actions": [
                    {"podcast": "https://feeds.example.com/show.xml",
                     "episode": f"https://cdn.example.com/{n}.mp3", "action": "download",
                     "timestamp": "2013-07-01T12:00:00", "device": "n900"}
                    for n in range(5)
                ],
                "timestamp": 1,
            }
        )
    )  # fmt: skip
    browser.get(f"{live_server.url}/data/")
    form = browser.find_element(By.CSS_SELECTOR, "form[action='/data/import-history/']")
    form.find_element(By.NAME, "file").send_keys(str(saved))
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait_until(lambda: "Imported from" in main_text(browser), 30, "the import's end")
    assert "a gpodder.net episode-actions file" in main_text(browser)
    assert EpisodeAction.objects.count() == 5
    found = checked(browser, live_server.url, browser.current_url.removeprefix(live_server.url))
    assert not found, "\n".join(found)
