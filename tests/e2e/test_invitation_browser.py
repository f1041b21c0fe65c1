"""An invitation in Chromium (docs/public-instance.md, "Registration"): staff make a link on the
account page, a newcomer opens it in another browser and makes their account, and the link then
says it does not work. At a phone's width and a laptop's; screenshots kept in test-output/e2e."""

from typing import Any
from urllib.parse import urlsplit

import pytest
from django.contrib.auth import get_user_model
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from accounts.models import Invitation
from tests.e2e.browser import main_text, reset_browser, whole_page_screenshot
from tests.e2e.test_mail_browser import fill, shown, submit
from tests.factories import UserFactory
from tests.web.helpers import PASSWORD

pytestmark = [pytest.mark.e2e]

NEW = "the newcomer's own passphrase 61"


@pytest.mark.parametrize("width", [390, 1280])
def test_an_invitation_from_the_account_page_to_a_new_account(
    live_server: Any,
    browser: WebDriver,
    transactional_db: None,
    settings: Any,
    plain_http_cookies: None,
    width: int,
) -> None:
    settings.REGISTRATION = "invitation"
    UserFactory(username="root", is_staff=True, with_password=PASSWORD)
    site = live_server.url
    browser.get(f"{site}/login/")
    fill(browser, {"username": "root", "password": PASSWORD})
    browser.get(f"{site}/account/")
    section = browser.find_element(By.XPATH, "//section[h2='Invitations']")
    submit(browser, section.find_element(By.CSS_SELECTOR, "button[type=submit]"))
    shown_link = browser.find_element(By.CSS_SELECTOR, ".secret code.password").text
    # Opened through localhost, the link names an address the newcomer's device reaches (the
    # connect page's rule); this browser follows it here.
    path = urlsplit(shown_link).path
    assert path.startswith("/register/")
    link = site + path
    shown(browser, "invitation-made", width)
    whole_page_screenshot(browser, f"invitation-made-whole-{width}")

    reset_browser(browser)  # the newcomer's browser
    browser.get(link)
    assert "root invites you" in main_text(browser)
    shown(browser, "invitation-opened", width)
    fill(browser, {"username": "newcomer", "password": NEW, "password_again": NEW})
    assert "Welcome! Your account is ready." in main_text(browser)
    assert get_user_model().objects.filter(username="newcomer").exists()
    assert Invitation.objects.get().used_by is not None

    reset_browser(browser)
    browser.get(link)
    assert "This invitation does not work" in main_text(browser)
    shown(browser, "invitation-used", width)
