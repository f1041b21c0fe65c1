"""The admin in a real browser: headless Chromium, driven by Selenium, against a live server.

Staff log in, find a subscription by searching for its feed URL, open it, and re-run a failed
deletion with the admin action; open the overview and an account's page, and follow its link to
the account's history, each checked by axe-core at a desktop's width and at 390 and 320 px.
Screenshots are saved under TEST_OUTPUT_DIR (default `test-output/`, git-ignored) in `e2e/`.
Chromium and chromedriver come from Debian's packages (scripts/install-servers.sh installs
them): when they are missing the test fails, it is not skipped.
"""

from datetime import timedelta
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import Select, WebDriverWait

from deletions.models import Deletion
from episodes import services
from episodes.actions import actions_parsed
from feedchecks.services import feed_check_run
from tests.e2e.browser import (
    OUTPUT_DIR,
    accessibility_violations,
    at_width,
    count,
    screenshot,
    sideways_scroll,
)
from tests.factories import UserFactory
from tests.helpers import subscribe

PASSWORD = "a long and unusual staff passphrase 1"

pytestmark = pytest.mark.e2e


def log_in(browser: WebDriver, base: str) -> None:
    """As the staff account every test makes."""
    browser.get(f"{base}/admin/login/?next=/admin/")
    browser.find_element(By.NAME, "username").send_keys("staff")
    browser.find_element(By.NAME, "password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "input[type=submit], button[type=submit]").click()
    WebDriverWait(browser, 15).until(
        expected_conditions.presence_of_element_located((By.ID, "user-tools"))
    )


def test_staff_find_a_subscription_and_rerun_its_failed_deletion(
    live_server: Any, transactional_db: None, plain_http_cookies: None, browser: WebDriver
) -> None:
    UserFactory(username="staff", is_staff=True, is_superuser=True, with_password=PASSWORD)
    alice: Any = UserFactory(username="alice")
    subscribe(alice, "https://other.example/feed.xml")
    sub = subscribe(alice, "https://browser.example/podcast.xml")
    deletion = Deletion.objects.create(
        user=alice,
        subscription_id=sub.pk,
        guid=sub.guid,
        status=Deletion.Status.FAILURE,
        message="The deletion process encountered an error and was rolled back",
        requested=sub.subscription_changed + timedelta(milliseconds=1),
    )
    wait = WebDriverWait(browser, 15)

    log_in(browser, live_server.url)

    # Find the subscription by searching for its feed URL, and open it.
    browser.get(f"{live_server.url}/admin/subscriptions/subscription/")
    search = browser.find_element(By.ID, "searchbar")
    search.send_keys("browser.example")
    search.submit()
    wait.until(expected_conditions.url_contains("q=browser.example"))
    rows = browser.find_elements(By.CSS_SELECTOR, "#result_list tbody tr")
    assert len(rows) == 1, [row.text for row in rows]
    rows[0].find_element(By.CSS_SELECTOR, "th a, td a").click()
    wait.until(expected_conditions.url_contains(f"/subscription/{sub.pk}/change/"))
    page = browser.find_element(By.ID, "content").text
    assert "https://browser.example/podcast.xml" in page
    assert str(sub.guid) in page
    assert "guid history" in page.lower()

    # Re-run the failed deletion with the admin action.
    browser.get(f"{live_server.url}/admin/deletions/deletion/?status__exact=FAILURE")
    browser.find_element(By.CSS_SELECTOR, f"input.action-select[value='{deletion.pk}']").click()
    Select(browser.find_element(By.NAME, "action")).select_by_value("retry")
    browser.find_element(By.CSS_SELECTOR, "button[name=index]").click()
    message = wait.until(
        expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "ul.messagelist"))
    )
    assert "Sent 1 deletion(s) again." in message.text
    assert "Skipped" not in message.text

    OUTPUT_DIR.joinpath("e2e").mkdir(parents=True, exist_ok=True)
    screenshot = OUTPUT_DIR / "e2e" / "admin-deletion-rerun.png"
    assert browser.save_screenshot(str(screenshot))
    assert screenshot.stat().st_size > 1000

    # The action went through the service: the task ran (in-process, after the commit).
    deletion.refresh_from_db()
    assert deletion.status == Deletion.Status.SUCCESS
    sub.refresh_from_db()
    assert sub.deleted is not None


def test_staff_search_episode_actions_by_podcast_url_and_open_one(
    live_server: Any, transactional_db: None, plain_http_cookies: None, browser: WebDriver
) -> None:
    UserFactory(username="staff", is_staff=True, is_superuser=True, with_password=PASSWORD)
    alice: Any = UserFactory(username="alice")
    upload = [
        {
            "podcast": "https://browser.example/podcast.xml",
            "episode": "https://browser.example/one.mp3",
            "action": "play",
            "position": 1234,
            "device": "phone",
        },
        {"podcast": "https://other.example/feed.xml", "episode": "e", "action": "new"},
    ]
    actions = services.actions_upload(user=alice, actions=actions_parsed(upload, limit=10))
    assert actions.update_urls == []
    wait = WebDriverWait(browser, 15)

    log_in(browser, live_server.url)

    browser.get(f"{live_server.url}/admin/episodes/episodeaction/")
    search = browser.find_element(By.ID, "searchbar")
    search.send_keys("browser.example/podcast")
    search.submit()
    wait.until(expected_conditions.url_contains("q=browser.example"))
    rows = browser.find_elements(By.CSS_SELECTOR, "#result_list tbody tr")
    assert len(rows) == 1, [row.text for row in rows]
    rows[0].find_element(By.CSS_SELECTOR, "th a, td a").click()
    wait.until(expected_conditions.url_contains("/change/"))
    page = browser.find_element(By.ID, "content").text
    assert "https://browser.example/one.mp3" in page
    assert "1234" in page
    assert "phone" in page
    # Read-only: no save button.
    assert not count(browser, "[name=_save]")


def checked(browser: WebDriver, name: str) -> None:
    """No serious accessibility violation, and nothing wider than the window."""
    violations = accessibility_violations(browser)
    assert not violations, f"{name}: {violations}"
    overflow = sideways_scroll(browser)
    assert overflow <= 0, f"{name} is {overflow}px wider than the window"


def checked_at_phone_widths(browser: WebDriver, name: str, shots: str) -> None:
    """The page shown checked at 390 and 320 px, its screenshot at 390 px as
    `<shots>-390.png`; then the desktop window again. Not loaded again: a width change lays it
    out as a load at that width does (tests/e2e/test_phone_widths.py)."""
    for width in (390, 320):
        at_width(browser, width)
        checked(browser, f"{name} at {width} px")
        if width == 390:
            screenshot(browser, f"{shots}-390")
    at_width(browser, None)


def test_staff_open_the_overview_and_an_accounts_page(
    live_server: Any, transactional_db: None, plain_http_cookies: None, browser: WebDriver
) -> None:
    UserFactory(username="staff", is_staff=True, is_superuser=True, with_password=PASSWORD)
    alice: Any = UserFactory(username="alice")
    sub = subscribe(alice, "https://browser.example/podcast.xml")
    upload = [
        {"podcast": sub.feed_url, "episode": f"https://browser.example/{n}.mp3",
         "action": "play", "position": 60 * n, "device": "phone"}
        for n in range(3)
    ]  # fmt: skip
    services.actions_upload(user=alice, actions=actions_parsed(upload, limit=10))
    Deletion.objects.create(
        user=alice,
        guid=sub.guid,
        status=Deletion.Status.FAILURE,
        message="The deletion process encountered an error and was rolled back",
        requested=sub.subscription_changed,
        finished=sub.subscription_changed,
    )
    for n in range(3):  # feeds on a private network, which the fetcher refuses
        feed_check_run(
            url=f"http://10.255.0.{n + 1}/a/very/long/path/to/a/feed.xml", user_id=alice.pk
        )
    browser.set_window_size(1366, 900)
    wait = WebDriverWait(browser, 15)

    log_in(browser, live_server.url)
    for width in (390, 320, None):  # the index, which links to the overview first
        at_width(browser, width)
        browser.refresh()
        checked(browser, f"the admin's index at {width or 'desktop'} px")
    browser.find_element(
        By.LINK_TEXT, "Accounts, syncs, deletions, failing feeds and queues"
    ).click()
    wait.until(expected_conditions.url_contains("/admin/overview/"))
    page = browser.find_element(By.ID, "content").text
    for heading in ("Accounts", "Syncs per day", "Deletions", "Failing feeds", "Queues"):
        assert heading in page
    assert "3 feeds failed their last check." in page
    assert "The deletion process encountered an error and was rolled back" in page
    checked(browser, "the overview")
    screenshot(browser, "admin-overview-desktop")
    browser.execute_script("document.getElementById('feeds-heading').scrollIntoView()")
    screenshot(browser, "admin-overview-desktop-feeds")
    checked_at_phone_widths(browser, "the overview", "admin-overview")

    # The account's page, and its history through the link.
    browser.get(f"{live_server.url}/admin/auth/user/{alice.pk}/change/")
    links = browser.find_element(By.CSS_SELECTOR, "ul.their-data").text
    assert "Podcasts (subscriptions): 1" in links
    assert "History (episode actions): 3" in links
    assert "Deletions of subscriptions: 1" in links
    assert "argon2" not in browser.find_element(By.ID, "content").text.lower()
    checked(browser, "the user page")
    screenshot(browser, "admin-user-desktop")
    checked_at_phone_widths(browser, "the user page", "admin-user")
    browser.find_element(By.PARTIAL_LINK_TEXT, "History (episode actions)").click()
    wait.until(expected_conditions.url_contains(f"user__id__exact={alice.pk}"))
    rows = browser.find_elements(By.CSS_SELECTOR, "#result_list tbody tr")
    assert len(rows) == 3
    checked(browser, "the episode actions")
    screenshot(browser, "admin-episode-actions-desktop")
    checked_at_phone_widths(browser, "the episode actions", "admin-episode-actions")
