"""Second factors in Chromium (docs/factors.md): a passkey added on the Account page through
Chromium's virtual authenticator, and the sign-in's second step taking it; an authenticator app
added by its QR code's key and a code made from it, and its recovery codes shown once. At a
phone's width and a laptop's; screenshots kept in test-output/e2e."""

from typing import Any

import pytest
from django_otp.plugins.otp_totp.models import TOTPDevice
from django_otp_webauthn.models import WebAuthnCredential
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from factors import selectors
from tests.e2e.browser import main_text, reset_browser
from tests.e2e.test_mail_browser import fill, shown, submit
from tests.factories import UserFactory
from tests.helpers import totp_code
from tests.web.helpers import PASSWORD

pytestmark = [pytest.mark.e2e]


def _authenticator(browser: WebDriver) -> str:
    """Chromium's virtual authenticator, as a phone's or laptop's built-in one: it keeps
    passkeys and verifies its user."""
    browser.execute_cdp_cmd("WebAuthn.enable", {"enableUI": False})
    made = browser.execute_cdp_cmd(
        "WebAuthn.addVirtualAuthenticator",
        {
            "options": {
                "protocol": "ctap2",
                "transport": "internal",
                "hasResidentKey": True,
                "hasUserVerification": True,
                "isUserVerified": True,
                "automaticPresenceSimulation": True,
            }
        },
    )
    return str(made["authenticatorId"])


def _wait_for(browser: WebDriver, element_id: str) -> Any:
    return WebDriverWait(browser, 10).until(
        expected_conditions.element_to_be_clickable((By.ID, element_id))
    )


def _sign_in(browser: WebDriver, site: str, username: str) -> None:
    browser.get(f"{site}/login/")
    fill(browser, {"username": username, "password": PASSWORD})


@pytest.mark.parametrize("width", [390, 1280])
def test_a_passkey_added_then_signing_in_with_it(
    site: str, browser: WebDriver, transactional_db: None, width: int
) -> None:
    person: Any = UserFactory(username="Zoë_passkey", with_password=PASSWORD)
    reset_browser(browser)
    authenticator = _authenticator(browser)
    try:
        _sign_in(browser, site, "Zoë_passkey")
        browser.get(f"{site}/account/#factors")
        submit(browser, _wait_for(browser, "passkey-register-button"))
        WebDriverWait(browser, 10).until(lambda b: "Your recovery codes" in main_text(b))
        assert WebAuthnCredential.objects.filter(user=person, confirmed=True).count() == 1
        assert "Passkey" in main_text(browser)
        shown(browser, "factors-passkey-added", width)

        submit(browser, browser.find_element(By.CSS_SELECTOR, "form[action='/logout/'] button"))
        _sign_in(browser, site, "Zoë_passkey")
        assert browser.current_url.endswith("/login/second/")
        _wait_for(browser, "passkey-verification-button")
        shown(browser, "factors-second-step", width)
        browser.find_element(By.ID, "passkey-verification-button").click()
        WebDriverWait(browser, 10).until(lambda b: b.current_url.endswith("/podcasts/"))
        assert "Sign out" in browser.page_source
    finally:
        browser.execute_cdp_cmd(
            "WebAuthn.removeVirtualAuthenticator", {"authenticatorId": authenticator}
        )


@pytest.mark.parametrize("width", [390, 1280])
def test_an_authenticator_app_added_by_its_key(
    site: str, browser: WebDriver, transactional_db: None, width: int
) -> None:
    person: Any = UserFactory(username="Zoë_app", with_password=PASSWORD)
    reset_browser(browser)
    _sign_in(browser, site, "Zoë_app")
    browser.get(f"{site}/account/")
    browser.find_element(By.ID, "app_password").send_keys(PASSWORD)
    add = browser.find_element(By.CSS_SELECTOR, "form[action='/account/factors/app/'] button")
    submit(browser, add)
    qr = browser.find_element(By.CSS_SELECTOR, "img.qr").get_attribute("src") or ""
    assert qr.startswith("data:image/svg+xml")
    shown(browser, "factors-app-key", width)
    device = TOTPDevice.objects.get(user=person, confirmed=False)
    fill(browser, {"code": totp_code(device)})
    assert "Recovery codes" in main_text(browser)
    shown(browser, "factors-recovery-codes", width)
    assert selectors.factors_of(user=person).apps
