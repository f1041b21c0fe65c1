"""The People page in a real browser: headless Chromium, driven by Selenium, against a live
server, at a desktop's width and at 390 and 320 px (docs/operations.md, "The admin").

Staff follow the People link of the pages' menu, add a member and read its one-time password
off the page; the member signs in with it on a phone and chooses their own password. Staff give
another account a new password and turn one off, each asked first. The admin's users list, with
many accounts of long names, shows whole on a phone. Each page is checked by axe-core and for
sideways scrolling; screenshots go under TEST_OUTPUT_DIR/e2e/ as `people-*.png`.
"""

from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.e2e.browser import at_width, count, main_text, screenshot, sideways_scroll
from tests.e2e.test_admin_browser import checked, checked_at_phone_widths
from tests.e2e.test_phone_widths import problems_of
from tests.factories import UserFactory
from tests.helpers import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("transactional_db", "plain_http_cookies")]

PASSWORD = "a long and unusual staff passphrase 1"
OWN = "bob's very own passphrase 2024"


def sign_in(browser: WebDriver, base: str, username: str, password: str) -> None:
    browser.get(f"{base}/login/")
    browser.find_element(By.NAME, "username").send_keys(username)
    browser.find_element(By.NAME, "password").send_keys(password)
    browser.find_element(By.CSS_SELECTOR, "main button[type=submit]").click()


def signed_out(browser: WebDriver) -> None:
    browser.execute_cdp_cmd("Network.clearBrowserCookies", {})


def test_staff_add_a_member_who_signs_in_with_the_one_time_password(
    live_server: Any, browser: WebDriver
) -> None:
    UserFactory(username="admin", is_staff=True, is_superuser=True, with_password=PASSWORD)
    UserFactory(username="Zoë_Øvergaard-Sørensen.podcasts@field-notes", is_active=False)
    carol: Any = UserFactory(username="carol", with_password=PASSWORD)
    base = live_server.url

    # From the pages' menu, where staff see the People link.
    sign_in(browser, base, "admin", PASSWORD)
    wait_until(lambda: "/podcasts/" in browser.current_url, 20, "the podcasts page")
    browser.find_element(By.LINK_TEXT, "People").click()
    wait_until(lambda: "/admin/people/" in browser.current_url, 20, "the People page")
    assert "Add a member" in browser.find_element(By.ID, "content").text
    checked(browser, "the People page")
    screenshot(browser, "people-desktop")
    checked_at_phone_widths(browser, "the People page", "people")

    # Add a member, on a phone: the one-time password is shown once.
    at_width(browser, 390)
    browser.find_element(By.NAME, "username").send_keys("bob")
    browser.find_element(By.CSS_SELECTOR, "form.add input[type=submit]").click()
    shown = browser.find_element(By.CSS_SELECTOR, ".handed .password code")
    one_time = shown.text.strip()
    assert len(one_time) == 19, one_time
    assert "Shown only this once" in browser.find_element(By.CSS_SELECTOR, ".handed").text
    checked(browser, "the new member's password at 390 px")
    screenshot(browser, "people-added-390")
    at_width(browser, None)
    checked(browser, "the new member's password")
    screenshot(browser, "people-added-desktop")

    # A new password for carol, and carol turned off: each asked first.
    browser.get(f"{base}/admin/people/{carol.pk}/password/")
    assert "A new one-time password for carol?" in browser.find_element(By.ID, "content").text
    checked(browser, "the new password's question")
    checked_at_phone_widths(browser, "the new password's question", "people-password")
    browser.find_element(By.CSS_SELECTOR, "#content-main input[type=submit]").click()
    assert browser.find_element(By.CSS_SELECTOR, ".handed .password code").text
    browser.get(f"{base}/admin/people/{carol.pk}/off/")
    checked_at_phone_widths(browser, "turning off's question", "people-off")
    browser.find_element(By.CSS_SELECTOR, "#content-main input[type=submit]").click()
    wait_until(lambda: count(browser, "ul.messagelist") > 0, 20, "the message")
    message = browser.find_element(By.CSS_SELECTOR, "ul.messagelist").text
    assert "The account carol is turned off" in message
    carol.refresh_from_db()
    assert not carol.is_active

    # Bob, on his phone: the one-time password asks for his own, then he is in.
    signed_out(browser)
    at_width(browser, 390)
    sign_in(browser, base, "bob", one_time)
    browser.find_element(By.NAME, "password_again")
    assert "Choose your password" in main_text(browser)
    checked(browser, "choosing one's password at 390 px")
    screenshot(browser, "people-choose-390")
    browser.find_element(By.NAME, "password").send_keys(OWN)
    browser.find_element(By.NAME, "password_again").send_keys(OWN)
    browser.find_element(By.CSS_SELECTOR, "main button[type=submit]").click()
    wait_until(lambda: "/podcasts/" in browser.current_url, 20, "bob's podcasts")
    assert "Your password is set" in main_text(browser)
    assert "bob" in browser.find_element(By.CSS_SELECTOR, ".signout").text
    assert not count(browser, "a[href='/admin/people/']")  # not staff: no People link
    screenshot(browser, "people-member-signed-in-390")
    at_width(browser, None)

    # From then on his own password signs him in, and the one-time one does not.
    signed_out(browser)
    sign_in(browser, base, "bob", one_time)
    wait_until(lambda: "Wrong username or password" in main_text(browser), 20, "the refusal")
    sign_in(browser, base, "bob", OWN)
    wait_until(lambda: "/podcasts/" in browser.current_url, 20, "bob's podcasts")


def seen_columns(browser: WebDriver) -> list[str]:
    """The users list's column names one sees: those hidden on a phone are still there for
    screen readers, a pixel wide."""
    return list(
        browser.execute_script(
            "return [...document.querySelectorAll('#result_list thead th')]"
            ".filter(th => th.getBoundingClientRect().width > 2 && th.innerText.trim())"
            ".map(th => th.innerText.trim().toLowerCase())"
        )
    )


def test_the_admins_users_list_shows_whole_on_a_phone(live_server: Any, browser: WebDriver) -> None:
    UserFactory(username="admin", is_staff=True, is_superuser=True, with_password=PASSWORD)
    UserFactory(username="x" * 150, email="y" * 60 + "@example.com")
    for n in range(30):
        UserFactory(
            username=f"Zoë_Øvergaard-Sørensen.podcasts{n}@field-notes",
            email=f"zoe.overgaard.sorensen{n}@a-long-domain.example",
        )
    sign_in(browser, live_server.url, "admin", PASSWORD)
    wait_until(lambda: "/podcasts/" in browser.current_url, 20, "the podcasts page")
    for width in (390, 320):
        at_width(browser, width)
        browser.get(f"{live_server.url}/admin/auth/user/")
        assert sideways_scroll(browser) <= 0
        inside = browser.execute_script(
            "const box = document.querySelector('#changelist-form .results');"
            "return box.scrollWidth - box.clientWidth"
        )
        assert inside <= 0, f"the table scrolls {inside}px sideways in its box at {width} px"
        assert seen_columns(browser) == ["username", "active", "staff status"]
        checked(browser, f"the users list at {width} px")
        screenshot(browser, f"people-admin-users-{width}")
    at_width(browser, None)
    browser.get(f"{live_server.url}/admin/auth/user/")
    shown = seen_columns(browser)
    assert "email address" in shown
    assert "last login" in shown


def test_closed_registration_says_so_at_every_width(live_server: Any, browser: WebDriver) -> None:
    browser.get(f"{live_server.url}/register/")
    found = []
    for width in (320, 390, 1366):
        at_width(browser, width)
        found += problems_of(
            browser, f"register closed at {width}px", width=width, signed_in=False, not_found=False
        )
        if width == 390:
            screenshot(browser, "people-register-closed-390")
    at_width(browser, None)
    assert "Registration is closed" in main_text(browser)
    assert not found, "\n".join(found)
