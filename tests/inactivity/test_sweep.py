"""INACTIVE_ACCOUNT_DAYS (docs/public-instance.md, "Inactive accounts"): an account unused that
long is warned by mail through a real SMTP server, suspended INACTIVE_WARNING_DAYS later if it
stays unused, keeps everything, and comes back when its person signs in on the pages or resets
a forgotten password. Nobody who syncs is ever warned; staff are never suspended."""

from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from accounts import activity
from accounts.models import Activity
from accounts.services import app_password_create, user_turn_off
from home import scheduler
from inactivity.services import inactive_accounts_sweep
from mail.models import Mail
from tests.conftest import MAIL_SITE
from tests.factories import UserFactory
from tests.helpers import Clock, basic, subscribe
from tests.mailserver import Mailbox, body, links
from tests.web.helpers import PASSWORD

# Real commits: the warning goes out after the sweep's commit, as deployed.
pytestmark = pytest.mark.django_db(transaction=True)

DAYS, WARNING = 100, 14
SYNC = "/api/2/subscriptions/idle/phone.json?since=0"


@pytest.fixture
def policy(settings: Any) -> None:
    settings.INACTIVE_ACCOUNT_DAYS = DAYS
    settings.INACTIVE_WARNING_DAYS = WARNING


def person(clock: Clock, username: str, *, idle_days: float | None, **fields: Any) -> Any:
    """An account joined long ago, last used `idle_days` ago (None: never since it joined)."""
    user: Any = UserFactory(
        username=username,
        email=f"{username}@example.org",
        with_password=PASSWORD,
        date_joined=clock.now - timedelta(days=400),
        **fields,
    )
    if idle_days is not None:
        activity.activity_seen(user.pk, at=clock.now - timedelta(days=idle_days))
        activity.noted.clear()  # the process that noted it then is not the one serving now
    return user


def is_on(user: Any) -> bool:
    return bool(get_user_model().objects.get(pk=user.pk).is_active)


def row(user: Any) -> Activity:
    return Activity.objects.get(user_id=user.pk)


def test_off_unless_set(clock: Clock, mailbox: Mailbox) -> None:
    idle = person(clock, "idle", idle_days=3000)

    assert inactive_accounts_sweep() == {"warned": 0, "suspended": 0}
    assert is_on(idle)
    assert "inactive accounts sweep" not in [name for name, _, _ in scheduler.jobs()]


def test_the_home_servers_schedule_runs_it_when_set(policy: None) -> None:
    assert "inactive accounts sweep" in [name for name, _, _ in scheduler.jobs()]


def test_an_account_going_idle_is_warned_once_by_mail(
    policy: None, clock: Clock, mailbox: Mailbox
) -> None:
    idle = person(clock, "idle", idle_days=DAYS - WARNING + 1)
    never = person(clock, "never", idle_days=None)  # not used since it joined, 400 days ago
    person(clock, "recent", idle_days=DAYS - WARNING - 5)
    person(clock, "boss", idle_days=3000, is_staff=True)
    person(clock, "root", idle_days=3000, is_superuser=True)

    assert inactive_accounts_sweep() == {"warned": 2, "suspended": 0}
    messages = mailbox.wait_for(2)
    assert sorted(m["To"] for m in messages) == ["idle@example.org", "never@example.org"]
    (message,) = [m for m in messages if m["To"] == "idle@example.org"]
    assert "your account is unused" in message["Subject"]
    text = body(message)
    assert "Your account idle on Podcast sync has not been used since" in text
    suspended_on = (clock.now + timedelta(days=WARNING)).strftime("%Y-%m-%d")
    assert f"Unless it is used before {suspended_on}" in text
    assert "Nothing of it is deleted" in text
    assert links(message) == [f"{MAIL_SITE}/login/", f"{MAIL_SITE}/data/"]
    assert "Sign in" in body(message, "html")
    assert row(idle).warned == clock.now
    assert row(never).seen == never.date_joined  # its row made, as of when it joined

    # Warned once: the next runs, before the warning's days are out, send nothing more.
    clock.advance(days=3)
    assert inactive_accounts_sweep() == {"warned": 0, "suspended": 0}
    assert Mail.objects.filter(kind=Mail.Kind.INACTIVE).count() == 2


def test_a_warned_account_left_unused_is_suspended_and_keeps_everything(
    policy: None, clock: Clock, mailbox: Mailbox
) -> None:
    idle = person(clock, "idle", idle_days=DAYS - WARNING)
    subscribe(idle, "https://feeds.example/kept.xml")
    _, app_password = app_password_create(user=idle, name="AntennaPod")
    inactive_accounts_sweep()
    mailbox.wait_for(1)

    clock.advance(days=WARNING - 1)
    assert inactive_accounts_sweep() == {"warned": 0, "suspended": 0}
    assert is_on(idle)
    clock.advance(days=1)
    assert inactive_accounts_sweep() == {"warned": 0, "suspended": 1}

    assert not is_on(idle)
    assert row(idle).suspended == clock.now
    app = Client(HTTP_AUTHORIZATION=basic("idle", app_password))
    assert app.get(SYNC).status_code == 401  # its apps no longer sync
    # Nothing deleted: its subscriptions and app password wait for it.
    assert idle.subscriptions.count() == 1
    assert idle.app_passwords.count() == 1


def test_an_account_used_after_its_warning_is_not_suspended(
    policy: None, clock: Clock, mailbox: Mailbox
) -> None:
    idle = person(clock, "idle", idle_days=DAYS - WARNING)
    _, app_password = app_password_create(user=idle, name="AntennaPod")
    inactive_accounts_sweep()
    mailbox.wait_for(1)

    clock.advance(days=2)
    app = Client(HTTP_AUTHORIZATION=basic("idle", app_password))
    assert app.get(SYNC).status_code == 200  # an app syncs once

    clock.advance(days=WARNING)
    assert inactive_accounts_sweep() == {"warned": 0, "suspended": 0}
    assert is_on(idle)
    # And warned anew only once it goes idle again: DAYS - WARNING days after that sync.
    clock.advance(days=DAYS - 2 * WARNING - 1)
    assert inactive_accounts_sweep() == {"warned": 0, "suspended": 0}
    clock.advance(days=1)
    assert inactive_accounts_sweep() == {"warned": 1, "suspended": 0}


def test_a_warning_the_account_was_used_before_it_went_out_says_nothing(
    policy: None, clock: Clock, settings: Any
) -> None:
    """The mail is written when it is sent: an account used since its warning was queued gets
    none."""
    from mail.services import mail_send

    settings.MAIL_ENABLED = True
    settings.PUBLIC_URL = MAIL_SITE
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.CELERY_TASK_ALWAYS_EAGER = False
    idle = person(clock, "idle", idle_days=DAYS - WARNING)
    mail = Mail.objects.create(
        kind=Mail.Kind.INACTIVE,
        address=idle.email,
        user=idle,
        next_try=clock.now,
        created=clock.now,
    )
    Activity.objects.filter(user_id=idle.pk).update(warned=clock.now)
    clock.advance(hours=2)
    activity.noted.clear()
    activity.activity_seen(idle.pk)

    assert mail_send(mail_id=mail.pk) == Mail.State.NONE


def test_without_mail_the_warning_is_noted_and_the_suspension_follows(
    policy: None, clock: Clock
) -> None:
    idle = person(clock, "idle", idle_days=DAYS - WARNING)

    assert inactive_accounts_sweep() == {"warned": 1, "suspended": 0}
    assert not Mail.objects.exists()
    clock.advance(days=WARNING)
    assert inactive_accounts_sweep() == {"warned": 0, "suspended": 1}
    assert not is_on(idle)


def suspended_person(clock: Clock, username: str = "idle") -> Any:
    user = person(clock, username, idle_days=DAYS - WARNING)
    subscribe(user, "https://feeds.example/kept.xml")
    inactive_accounts_sweep()
    clock.advance(days=WARNING)
    inactive_accounts_sweep()
    assert not is_on(user)
    return user


def test_the_person_comes_back_by_signing_in_and_can_export(policy: None, clock: Clock) -> None:
    idle = suspended_person(clock)
    browser = Client()

    answer = browser.post("/login/", {"username": "idle", "password": PASSWORD}, follow=True)

    assert answer.status_code == 200
    assert is_on(idle)
    assert answer.redirect_chain[-1][0] == "/podcasts/"
    assert "Welcome back: your account was suspended" in answer.content.decode()
    assert row(idle).suspended is None
    assert row(idle).warned is None
    assert row(idle).seen == clock.now
    export = browser.get("/data/everything.json")
    assert export.status_code == 200
    content = b"".join(export.streaming_content)  # type: ignore[attr-defined]
    assert b"https://feeds.example/kept.xml" in content


def test_a_wrong_password_lifts_nothing(policy: None, clock: Clock) -> None:
    idle = suspended_person(clock)

    answer = Client().post("/login/", {"username": "idle", "password": "not it at all"})

    assert answer.status_code == 200
    assert "Wrong username or password" in answer.content.decode()
    assert not is_on(idle)
    assert row(idle).suspended is not None


def test_an_app_password_lifts_nothing(policy: None, clock: Clock) -> None:
    idle = person(clock, "idle", idle_days=DAYS - WARNING)
    _, app_password = app_password_create(user=idle, name="AntennaPod")
    inactive_accounts_sweep()
    clock.advance(days=WARNING)
    inactive_accounts_sweep()

    Client().post("/login/", {"username": "idle", "password": app_password})
    Client(HTTP_AUTHORIZATION=basic("idle", app_password)).get(SYNC)

    assert not is_on(idle)


def test_a_forgotten_password_is_reset_and_the_account_comes_back(
    policy: None, clock: Clock, mailbox: Mailbox
) -> None:
    idle = person(clock, "idle", idle_days=DAYS - WARNING)
    inactive_accounts_sweep()
    clock.advance(days=WARNING)
    inactive_accounts_sweep()
    mailbox.wait_for(1)  # the warning

    Client().post("/login/reset/", {"address": "idle@example.org"})
    _, reset = mailbox.wait_for(2)
    [link] = [link for link in links(reset) if "/login/reset/" in link]
    path = urlsplit(link).path
    new = "a new passphrase after a long break"
    answer = Client().post(path, {"password": new, "password_again": new})

    assert answer.status_code == 302
    assert is_on(idle)
    assert row(idle).suspended is None
    assert Client().post("/login/", {"username": "idle", "password": new}).status_code == 302


def test_staff_turning_off_a_suspended_account_keeps_it_off(policy: None, clock: Clock) -> None:
    idle = suspended_person(clock)
    staff: Any = UserFactory(username="staff", is_staff=True, is_superuser=True)

    user_turn_off(user_id=idle.pk, acting_user=staff)
    Client().post("/login/", {"username": "idle", "password": PASSWORD})

    assert not is_on(idle)
    assert row(idle).suspended is None  # staff's decision now, not the policy's


def test_staff_see_it_on_the_people_page(policy: None, clock: Clock) -> None:
    suspended_person(clock)
    person(clock, "active", idle_days=1)
    staff: Any = UserFactory(username="staff", is_staff=True, is_superuser=True)
    admin = Client()
    admin.force_login(staff)

    page = admin.get("/admin/people/").content.decode()

    assert "Last active" in page
    assert "<strong>suspended</strong>" in page
    assert f"not active for {DAYS} days is warned, then suspended {WARNING} days later" in page
    assert (clock.now - timedelta(days=1)).strftime("%Y-%m-%d") in page


def test_a_sweep_is_bounded_and_the_next_goes_on(
    policy: None, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("inactivity.services.BATCH", 3)
    for n in range(7):
        person(clock, f"idle{n}", idle_days=DAYS)

    assert inactive_accounts_sweep()["warned"] == 3
    assert inactive_accounts_sweep()["warned"] == 3
    assert inactive_accounts_sweep()["warned"] == 1
    assert inactive_accounts_sweep()["warned"] == 0


def test_an_account_staff_turned_off_is_never_suspended_nor_warned(
    policy: None, clock: Clock
) -> None:
    off = person(clock, "off", idle_days=3000, is_active=False)

    assert inactive_accounts_sweep() == {"warned": 0, "suspended": 0}
    assert not Activity.objects.filter(user_id=off.pk, warned__isnull=False).exists()
