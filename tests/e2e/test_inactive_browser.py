"""An idle account in Chromium (docs/public-instance.md, "Inactive accounts"): the warning as a
mail program shows it, caught by a real SMTP server; staff's People page saying it is
suspended; its person signing in on the pages, welcomed back, their data there to export. At a
phone's width and a laptop's; screenshots kept in test-output/e2e."""

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from accounts import activity
from accounts.models import Activity
from core import clock
from inactivity.services import inactive_accounts_sweep
from tests.e2e.browser import main_text, reset_browser
from tests.e2e.test_mail_browser import fill, mail_as_read, shown
from tests.factories import UserFactory
from tests.helpers import subscribe
from tests.mailserver import Mailbox
from tests.web.helpers import PASSWORD

pytestmark = [pytest.mark.e2e]

DAYS, WARNING = 365, 14


@pytest.mark.parametrize("width", [390, 1280])
def test_warned_suspended_and_back_by_signing_in(
    site: str,
    mailbox: Mailbox,
    browser: WebDriver,
    transactional_db: None,
    settings: Any,
    width: int,
) -> None:
    settings.INACTIVE_ACCOUNT_DAYS, settings.INACTIVE_WARNING_DAYS = DAYS, WARNING
    long_ago = clock.now() - timedelta(days=DAYS + 30)
    idle: Any = UserFactory(
        username="Zoë_idle",
        email="zoe@example.org",
        with_password=PASSWORD,
        date_joined=long_ago,
    )
    subscribe(idle, "https://feeds.example/still-here.xml")
    activity.activity_seen(idle.pk, at=long_ago)
    UserFactory(username="root", is_staff=True, is_superuser=True, with_password=PASSWORD)

    assert inactive_accounts_sweep()["warned"] == 1
    (warning,) = mailbox.wait_for(1)
    mail_as_read(browser, warning, "inactive-warning-mail", width)
    # The warning's days pass with nobody using it.
    Activity.objects.filter(user_id=idle.pk).update(warned=clock.now() - timedelta(days=WARNING))
    assert inactive_accounts_sweep()["suspended"] == 1

    browser.get(f"{site}/admin/login/?next=/admin/people/")
    fill(browser, {"username": "root", "password": PASSWORD})
    row = browser.find_element(By.XPATH, "//tr[.//a[text()='Zoë_idle']]")
    assert "suspended" in row.text
    shown(browser, "inactive-people", width)

    reset_browser(browser)  # the person's own browser
    browser.get(f"{site}/login/")
    fill(browser, {"username": "Zoë_idle", "password": PASSWORD})
    assert "Welcome back: your account was suspended" in main_text(browser)
    assert "still-here.xml" in main_text(browser)
    shown(browser, "inactive-welcome-back", width)
    assert get_user_model().objects.get(pk=idle.pk).is_active
