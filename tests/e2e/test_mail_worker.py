"""Mail as deployed (docs/public-instance.md, "Mail"): gunicorn under the production settings
over plain HTTP, a real Redis and a real Celery worker sending through a real SMTP server; and
`make run`, the home server, sending from a thread with no broker. Each time a person asks for
a reset on the pages, gets the mail, chooses a new password from its link and signs in with it."""

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests
from django.db import connection

from tests.e2e.conftest import pages_settings
from tests.e2e.test_home_server import LAN_NAME, HomeServer, fresh_copy, lan_name  # noqa: F401
from tests.factories import UserFactory
from tests.mailserver import Mailbox, links, smtp_server
from tests.servers import free_port, gunicorn_service, production_env

pytestmark = [pytest.mark.e2e]

PASSWORD = "a long and unusual passphrase for mail"
NEW = "the passphrase chosen from the mail 5"
TIMEOUT = 30


@pytest.fixture
def box() -> Iterator[Mailbox]:
    with smtp_server() as mailbox:
        yield mailbox


def token_of(page: requests.Response) -> str:
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert found, page.text[:500]
    return found[1]


def form_post(
    session: requests.Session, url: str, fields: dict[str, str], *, action: str = ""
) -> requests.Response:
    """Post the form of the page at `url` (to `action`, when it posts elsewhere) as a browser
    does: with the token from the page and its cookie."""
    page = session.get(url, timeout=TIMEOUT)
    assert page.status_code == 200, page.text[:500]
    return session.post(
        action or url,
        {"csrfmiddlewaretoken": token_of(page), **fields},
        headers={"Referer": url},
        allow_redirects=False,
        timeout=TIMEOUT,
    )


def reset_by_mail(site: str, box: Mailbox, username: str, address: str) -> None:
    """A person's whole reset, from asking on the pages to signing in with the new password."""
    asked = form_post(requests.Session(), f"{site}/login/reset/", {"address": address})
    assert asked.status_code == 200
    assert "Check your mail" in asked.text
    (message,) = box.wait_for(1, timeout=60)
    assert message["To"] == address
    (link,) = links(message)
    assert link.startswith(f"{site}/login/reset/"), link
    chosen = form_post(requests.Session(), link, {"password": NEW, "password_again": NEW})
    assert chosen.status_code == 302, chosen.text[:500]
    assert urlsplit(chosen.headers["Location"]).path == "/login/"
    signed = form_post(
        requests.Session(), f"{site}/login/", {"username": username, "password": NEW}
    )
    assert signed.status_code == 302
    assert urlsplit(signed.headers["Location"]).path == "/podcasts/"
    assert requests.get(link, timeout=TIMEOUT).status_code == 404  # used once


def test_a_worker_sends_the_full_layouts_mail(
    box: Mailbox, worker_factory: Any, broker: Any, static_settings: Path, tmp_path: Path
) -> None:
    UserFactory(username="alice", email="alice@example.com", with_deployed_password=PASSWORD)
    port = free_port()
    site = f"http://127.0.0.1:{port}"
    mail = {"EMAIL_URL": f"smtp://127.0.0.1:{box.port}", "PUBLIC_URL": site}
    env = production_env(
        "mail",
        connection.settings_dict,
        **pages_settings(static_settings),
        **mail,
        REDIS_URL=broker.url,
        WEB_CONCURRENCY="2",
        LOG_LEVEL="WARNING",
    )
    env.pop("DEBUG", None)
    # The worker makes the links the web processes read back: one SECRET_KEY for both.
    worker = worker_factory(**mail, SECRET_KEY=env["SECRET_KEY"])
    with gunicorn_service(env, tmp_path / "gunicorn.log", port=port):
        try:
            reset_by_mail(site, box, "alice", "alice@example.com")
        except AssertionError:
            print(worker.output())
            raise
    assert "mail.tasks.send_mail" in worker.output()


@pytest.fixture(scope="module")
def home_with_mail(
    tmp_path_factory: pytest.TempPathFactory,
    lan_name: None,  # noqa: F811
) -> Iterator[tuple[HomeServer, Mailbox]]:
    with smtp_server() as mailbox:
        port = free_port()
        mail = {
            "EMAIL_URL": f"smtp://127.0.0.1:{mailbox.port}",
            "PUBLIC_URL": f"http://{LAN_NAME}:{port}",
        }
        server = HomeServer(fresh_copy(tmp_path_factory.mktemp("clone")), port, env=mail)
        try:
            yield server, mailbox
        finally:
            if server.process is not None and server.process.poll() is None:
                server.stop()


def test_the_home_server_sends_its_mail_from_a_thread(
    home_with_mail: tuple[HomeServer, Mailbox],
) -> None:
    home, box = home_with_mail
    printed = home.start()
    printed_password = re.search(r"Sign in as 'admin' with the password: (\S+)", printed)
    assert printed_password, home.printed()
    # The admin signs in and gives the account an address.
    session = requests.Session()
    own = printed_password[1]
    signed = form_post(session, f"{home.url}/login/", {"username": "admin", "password": own})
    assert signed.status_code == 302, signed.text[:500]
    fields = {"address": "admin@home.example", "password": own}
    changed = form_post(
        session, f"{home.url}/account/", fields, action=f"{home.url}/account/address/"
    )
    assert changed.status_code == 302, changed.text[:500]
    (confirm,) = box.wait_for(1, timeout=60)
    box.received.clear()
    (link,) = links(confirm)
    assert link.startswith(f"{home.url}/account/address/"), link
    assert form_post(requests.Session(), link, {}).status_code == 302

    reset_by_mail(home.url, box, "admin", "admin@home.example")
