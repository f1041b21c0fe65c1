"""Mail goes out after the request that asked for it, by a worker or a thread, and is tried again
until it is sent (docs/public-instance.md, "Mail"): a server that refuses for a while loses
nothing, one that refuses for good or never answers is shown to staff, and none holds a worker
past EMAIL_TIMEOUT."""

import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from home import scheduler
from mail import services
from mail.models import Mail
from tests.factories import UserFactory
from tests.helpers import Clock, wait_until
from tests.mailserver import Mailbox
from tests.servers import free_port, settings_started
from tests.web.helpers import PASSWORD

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def alice(db: None) -> Any:
    return UserFactory(username="alice", email="alice@example.com", with_password=PASSWORD)


def ask() -> Mail:
    assert Client().post("/login/reset/", {"address": "alice@example.com"}).status_code == 200
    return Mail.objects.get()


def queued(clock: Clock, **fields: Any) -> Mail:
    """A mail as a request left it whose worker never took it (killed, or the broker away)."""
    return Mail.objects.create(next_try=clock.now, created=clock.now, **fields)


def test_a_server_refusing_for_a_while_loses_nothing(
    mailbox: Mailbox, alice: Any, clock: Clock
) -> None:
    mailbox.refuse = "451 4.3.0 Try again later"
    mail = ask()
    mail.refresh_from_db()
    assert (mail.state, mail.tries) == (Mail.State.PENDING, 1)
    assert "451 4.3.0 Try again later" in mail.error

    mailbox.refuse = ""
    assert services.mail_sweep()["sent_again"] == 0  # not due yet: a minute after the first try
    clock.advance(minutes=1, seconds=1)
    assert services.mail_sweep()["sent_again"] == 1
    mailbox.wait_for(1)
    mail.refresh_from_db()
    assert (mail.state, mail.tries, mail.error) == (Mail.State.SENT, 2, "")


def test_a_server_refusing_for_good_fails_at_once_and_staff_see_it(
    mailbox: Mailbox, alice: Any, admin_client: Client
) -> None:
    mailbox.refuse = "550 5.1.1 No such mailbox"
    mail = ask()
    mail.refresh_from_db()
    assert (mail.state, mail.tries) == (Mail.State.FAILED, 1)
    assert "No such mailbox" in mail.error

    overview = admin_client.get("/admin/overview/").content.decode()
    assert 'href="/admin/mail/mail/?state__exact=failed">1</a>' in overview
    listed = admin_client.get("/admin/mail/mail/?state__exact=failed").content.decode()
    assert "No such mailbox" in listed
    assert "alice@example.com" in listed
    # Read only: staff neither write mail nor change what was sent.
    assert admin_client.get("/admin/mail/mail/add/").status_code == 403


def test_a_server_away_is_tried_six_times_over_half_an_hour_then_failed(
    mailbox: Mailbox, alice: Any, clock: Clock, settings: Any
) -> None:
    settings.EMAIL_PORT = free_port()  # nothing listens there
    mail = ask()
    for _ in range(services.TRIES - 1):
        mail.refresh_from_db()
        assert mail.state == Mail.State.PENDING
        clock.now = mail.next_try
        services.mail_sweep()
    mail.refresh_from_db()
    assert (mail.state, mail.tries) == (Mail.State.FAILED, services.TRIES)
    assert "ConnectionRefusedError" in mail.error
    assert (mail.next_try - mail.created).total_seconds() > 31 * 60


def test_a_server_that_never_answers_holds_a_try_for_email_timeout_only(
    mailbox: Mailbox, alice: Any, settings: Any
) -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # accepts the connection, never says a word
        settings.EMAIL_PORT = silent.getsockname()[1]
        settings.EMAIL_TIMEOUT = 1
        mail = ask()
    mail.refresh_from_db()
    assert mail.state == Mail.State.PENDING
    assert "timed out" in mail.error


def test_a_worker_killed_while_sending_leaves_it_for_the_sweep(
    mailbox: Mailbox, alice: Any, clock: Clock
) -> None:
    """A try counted but never finished (the worker died) is due again once its wait has passed,
    and one whose last try was spent so is marked failed."""
    mail = queued(clock, kind=Mail.Kind.RESET, address="alice@example.com", tries=1)
    assert services.mail_sweep()["sent_again"] == 1
    mailbox.wait_for(1)
    assert Mail.objects.get(pk=mail.pk).state == Mail.State.SENT
    stuck = queued(clock, kind=Mail.Kind.RESET, address="alice@example.com", tries=services.TRIES)
    assert services.mail_sweep()["failed"] == 1
    assert Mail.objects.get(pk=stuck.pk).state == Mail.State.FAILED


def test_a_mail_is_sent_once_however_often_it_is_handed_on(mailbox: Mailbox, alice: Any) -> None:
    mail = ask()
    mailbox.wait_for(1)
    assert services.mail_send(mail_id=mail.pk) == Mail.State.SENT
    assert services.mail_sweep()["sent_again"] == 0
    assert len(mailbox.received) == 1


def test_what_staff_saw_long_enough_is_forgotten(
    mailbox: Mailbox, alice: Any, clock: Clock
) -> None:
    ask()
    clock.advance(days=30, minutes=2)
    assert services.mail_sweep()["forgotten"] == 1
    assert not Mail.objects.exists()


def test_a_confirmation_for_a_deleted_or_turned_off_account_is_not_sent(
    mailbox: Mailbox, alice: Any, clock: Clock
) -> None:
    queued(clock, kind=Mail.Kind.CONFIRM, address="new@example.com", user=alice)
    alice.is_active = False
    alice.save()
    mail = Mail.objects.get()
    assert services.mail_send(mail_id=mail.pk) == Mail.State.NONE
    alice.delete()
    assert not Mail.objects.exists()
    assert mailbox.received == []


def test_without_a_broker_a_thread_of_the_web_process_sends_it(
    mailbox: Mailbox, alice: Any, settings: Any
) -> None:
    settings.MAIL_IN_THREAD = True
    mail = ask()
    mailbox.wait_for(1)
    wait_until(lambda: Mail.objects.get(pk=mail.pk).state == Mail.State.SENT, 10, "the thread")


def test_the_home_servers_schedule_sweeps_mail_only_with_email_url(settings: Any) -> None:
    settings.MAIL_ENABLED = False
    assert "mail sweep" not in [name for name, _, _ in scheduler.jobs()]
    settings.MAIL_ENABLED = True
    settings.MAIL_SWEEP_INTERVAL = 30.0
    assert ("mail sweep", 30.0, services.mail_sweep) in scheduler.jobs()


MAIL_SETTINGS = [
    "EMAIL_BACKEND",
    "EMAIL_HOST",
    "EMAIL_PORT",
    "EMAIL_USE_TLS",
    "EMAIL_HOST_USER",
    "DEFAULT_FROM_EMAIL",
]


def start(tmp_path: Path, **settings: str) -> subprocess.CompletedProcess[str]:
    return settings_started(tmp_path, MAIL_SETTINGS, **settings)


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        ({"EMAIL_URL": "smtp://mail.example.com:587"}, "EMAIL_URL needs PUBLIC_URL"),
        (
            {"EMAIL_URL": "gopher://mail.example.com", "PUBLIC_URL": "https://sync.example.com"},
            "EMAIL_URL must look like smtp://",
        ),
        (
            {"EMAIL_URL": "smtp://mail.example.com:port", "PUBLIC_URL": "https://sync.example.com"},
            "EMAIL_URL must look like smtp://",
        ),
    ],
    ids=["no PUBLIC_URL", "unknown scheme", "port not a number"],
)
def test_a_mistyped_email_url_stops_the_start_saying_why(
    tmp_path: Path, settings: dict[str, str], problem: str
) -> None:
    started = start(tmp_path, **settings)
    assert started.returncode != 0
    assert problem in started.stderr
    assert "Traceback" not in started.stderr


def test_an_email_url_sets_the_server_and_the_sender(tmp_path: Path) -> None:
    started = start(
        tmp_path,
        EMAIL_URL="smtp+tls://sync%40example.com:p%2Fss@mail.example.com:587",
        PUBLIC_URL="https://sync.example.com",
        SITE_NAME="Our podcasts",
    )
    assert started.returncode == 0, started.stderr
    assert started.stdout.strip().splitlines()[-1].split("|") == [
        "django.core.mail.backends.smtp.EmailBackend",
        "mail.example.com",
        "587",
        "True",
        "sync@example.com",
        "Our podcasts <noreply@sync.example.com>",
    ]
