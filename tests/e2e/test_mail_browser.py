"""A forgotten password reset in Chromium, with the mail caught by a real SMTP server
(docs/public-instance.md, "Password reset"): the link on the sign-in page, the mail (its HTML
part, shown as a mail program shows it), the new password, signing in with it; and an address
confirmed from the account page. At a phone's width and a laptop's, with no sideways scrolling
and no serious accessibility fault; the screenshots are kept in test-output/e2e."""

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.contrib.auth import get_user_model
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from tests.e2e.browser import (
    OUTPUT_DIR,
    accessibility_violations,
    at_width,
    main_text,
    screenshot,
    sideways_scroll,
)
from tests.factories import UserFactory
from tests.mailserver import Mailbox, body, links
from tests.web.helpers import PASSWORD

pytestmark = [pytest.mark.e2e]

NEW = "a new passphrase chosen in Chromium 8"


def submit(browser: WebDriver, button: WebElement) -> None:
    """Click the form's button and wait for the page that answers it."""
    button.click()
    WebDriverWait(browser, 10).until(expected_conditions.staleness_of(button))


def fill(browser: WebDriver, fields: dict[str, str]) -> None:
    for name, value in fields.items():
        element = browser.find_element(By.NAME, name)
        element.clear()
        element.send_keys(value)
    submit(browser, browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]"))


def shown(browser: WebDriver, name: str, width: int) -> None:
    """The page at `width`: no sideways scrolling, no serious accessibility fault, kept."""
    at_width(browser, width)
    assert sideways_scroll(browser) == 0, name
    assert accessibility_violations(browser) == [], name
    screenshot(browser, f"{name}-{width}")


def mail_as_read(browser: WebDriver, message: Any, name: str, width: int) -> None:
    """The mail's HTML part, as a mail program shows it."""
    page = OUTPUT_DIR / "e2e" / f"{name}.html"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(body(message, "html"))
    at_width(browser, width)
    browser.get(Path(page).as_uri())
    screenshot(browser, f"{name}-{width}")


@pytest.mark.parametrize("width", [390, 1280])
def test_a_forgotten_password_from_the_sign_in_page_to_signing_in(
    site: str, mailbox: Mailbox, browser: WebDriver, transactional_db: None, width: int
) -> None:
    alice: Any = UserFactory(username="alice", email="alice@example.com", with_password=PASSWORD)
    at_width(browser, width)
    browser.get(f"{site}/login/")
    browser.find_element(By.LINK_TEXT, "Forgot your password?").click()
    shown(browser, "reset-request", width)
    fill(browser, {"address": "alice@example.com"})
    assert "If an account here has the address alice@example.com" in main_text(browser)
    shown(browser, "reset-sent", width)

    (message,) = mailbox.wait_for(1)
    mail_as_read(browser, message, "reset-mail", width)
    (link,) = links(message)
    assert urlsplit(link).netloc == urlsplit(site).netloc
    browser.get(link)
    assert "For your account alice" in main_text(browser)
    shown(browser, "reset-password", width)
    fill(browser, {"password": NEW, "password_again": NEW})

    assert urlsplit(browser.current_url).path == "/login/"
    assert "Your password is changed: sign in with it" in main_text(browser)
    shown(browser, "reset-done", width)
    assert get_user_model().objects.get(pk=alice.pk).check_password(NEW)
    fill(browser, {"username": "alice", "password": NEW})
    assert urlsplit(browser.current_url).path == "/podcasts/"

    browser.get(link)  # once only
    assert "This link does not work" in main_text(browser)
    shown(browser, "reset-link-dead", width)


def test_an_address_confirmed_from_the_account_page(
    site: str, mailbox: Mailbox, browser: WebDriver, transactional_db: None
) -> None:
    alice: Any = UserFactory(username="alice", email="old@example.com", with_password=PASSWORD)
    browser.get(f"{site}/login/")
    fill(browser, {"username": "alice", "password": PASSWORD})
    browser.get(f"{site}/account/")
    section = browser.find_element(By.XPATH, "//section[h2='Email address']")
    assert "Your address is old@example.com, not confirmed yet" in section.text
    section.find_element(By.NAME, "address").send_keys("new@example.com")
    section.find_element(By.NAME, "password").send_keys(PASSWORD)
    submit(browser, section.find_element(By.CSS_SELECTOR, "button[type=submit]"))
    assert "A link is on its way to new@example.com" in main_text(browser)
    shown(browser, "address-sent", 390)

    (message,) = mailbox.wait_for(1)
    mail_as_read(browser, message, "confirm-mail", 390)
    browser.get(links(message)[0])
    shown(browser, "address-confirm", 390)
    submit(browser, browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]"))
    assert "new@example.com is now the address of your account" in main_text(browser)
    assert "Your address is new@example.com, confirmed" in main_text(browser)
    assert get_user_model().objects.get(pk=alice.pk).email == "new@example.com"
