"""Registration by invitation (docs/public-instance.md, "Registration"): staff, or members where
the server allows, make single-use links that expire; each makes one account, and a link used,
withdrawn, too old or forged makes none and says so."""

import re
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client

from accounts import invitations
from accounts.models import Invitation
from accounts.throttles import RegistrationThrottle
from tests.factories import UserFactory
from tests.helpers import Clock
from tests.servers import settings_started
from tests.web.helpers import PASSWORD

NEW_PASSWORD = "a passphrase for the invited 42"


@pytest.fixture
def by_invitation(settings: Any) -> None:
    settings.REGISTRATION = "invitation"


@pytest.fixture
def host(db: None) -> Any:
    return UserFactory(username="root", is_staff=True, with_password=PASSWORD)


def signed_in(user: Any) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


def invite(browser: Client) -> str:
    """Make an invitation on the account page; the path of the link it shows."""
    answer = browser.post("/account/invitations/")
    assert answer.status_code == 200, answer.content[:500]
    found = re.search(r'<code class="password">([^<]+)</code>', answer.content.decode())
    assert found, answer.content.decode()
    return urlsplit(found[1]).path


def register(path: str, username: str = "newcomer", client: Client | None = None) -> Any:
    fields = {"username": username, "password": NEW_PASSWORD, "password_again": NEW_PASSWORD}
    return (client or Client()).post(path, fields)


def accounts_named(username: str) -> int:
    return get_user_model().objects.filter(username=username).count()


def test_an_invitation_link_makes_one_account(by_invitation: None, host: Any) -> None:
    path = invite(signed_in(host))
    assert path.startswith("/register/")
    again = signed_in(host).get("/account/").content.decode()
    assert path not in again  # shown once
    assert "not yet; works until" in again

    page = Client().get(path)
    assert page.status_code == 200
    assert "<strong>root</strong> invites you" in page.content.decode()
    browser = Client()
    made = register(path, client=browser)
    assert made.status_code == 302
    assert browser.get("/podcasts/").status_code == 200  # signed in at once
    invitation = Invitation.objects.get()
    assert invitation.used_by == get_user_model().objects.get(username="newcomer")
    assert "by newcomer" in signed_in(host).get("/account/").content.decode()

    used = register(path, "second")
    assert used.status_code == 404
    assert "This invitation does not work" in used.content.decode()
    assert accounts_named("second") == 0


def test_without_a_link_the_page_says_registration_is_by_invitation(
    by_invitation: None, db: None
) -> None:
    page = Client().get("/register/")
    assert page.status_code == 404
    assert "Registration is by invitation" in page.content.decode()
    assert register("/register/").status_code == 404
    assert accounts_named("newcomer") == 0
    assert 'href="/register/"' not in Client().get("/login/").content.decode()


def test_members_invite_only_where_the_server_lets_them(
    by_invitation: None, person: Any, settings: Any
) -> None:
    member = signed_in(person)
    assert "Invitations" not in member.get("/account/").content.decode()
    refused = member.post("/account/invitations/")
    assert refused.status_code == 400
    assert "Invitations are not yours to make on this server" in refused.content.decode()
    assert not Invitation.objects.exists()

    settings.INVITATIONS_BY_MEMBERS = True
    assert register(invite(member)).status_code == 302


@pytest.mark.parametrize("mode", ["closed", "open"])
def test_outside_invitation_mode_no_link_works_and_none_is_made(
    host: Any, settings: Any, mode: str
) -> None:
    settings.REGISTRATION = "invitation"
    path = invite(signed_in(host))
    settings.REGISTRATION = mode
    assert "Invitations" not in signed_in(host).get("/account/").content.decode()
    assert signed_in(host).post("/account/invitations/").status_code == 400
    assert register(path).status_code == 404
    assert accounts_named("newcomer") == 0


def test_a_link_too_old_withdrawn_or_of_a_maker_turned_off_makes_nothing(
    by_invitation: None, host: Any, clock: Clock
) -> None:
    browser = signed_in(host)
    old, withdrawn, orphaned = invite(browser), invite(browser), invite(browser)
    clock.advance(days=7, seconds=1)
    assert register(old, "late").status_code == 404

    fresh = Invitation.objects.filter(expires__gt=clock.now)
    fresh.update(expires=clock.now + timedelta(days=1))
    withdrawn_id = Invitation.objects.get(digest=invitations._digest(withdrawn.split("/")[2])).pk
    answer = browser.post(f"/account/invitations/{withdrawn_id}/withdraw/")
    assert answer.status_code == 302
    assert register(withdrawn, "withdrawn").status_code == 404
    assert browser.post(f"/account/invitations/{withdrawn_id}/withdraw/").status_code == 404

    get_user_model().objects.filter(pk=host.pk).update(is_active=False)
    assert register(orphaned, "orphan").status_code == 404
    assert get_user_model().objects.count() == 1


def test_nobody_withdraws_anothers_invitation(by_invitation: None, host: Any, person: Any) -> None:
    path = invite(signed_in(host))
    theirs = Invitation.objects.get().pk
    assert signed_in(person).post(f"/account/invitations/{theirs}/withdraw/").status_code == 404
    assert register(path).status_code == 302


def test_an_account_holds_at_most_max_open_invitations(
    by_invitation: None, host: Any, settings: Any
) -> None:
    settings.MAX_OPEN_INVITATIONS = 2
    browser = signed_in(host)
    invite(browser)
    invite(browser)
    refused = browser.post("/account/invitations/")
    assert refused.status_code == 400
    assert "(MAX_OPEN_INVITATIONS)" in refused.content.decode()
    assert Invitation.objects.count() == 2


def test_a_refused_username_keeps_the_invitation(by_invitation: None, host: Any) -> None:
    path = invite(signed_in(host))
    refused = register(path, "root")  # taken
    assert refused.status_code == 200
    assert "already taken" in refused.content.decode()
    assert register(path).status_code == 302


@pytest.mark.parametrize(
    "token",
    ["forged", "x" * 5000, "%00", "ünïcode", "a/b"],
    ids=["word", "huge", "NUL", "unicode", "slash"],
)
def test_a_forged_link_makes_nothing(by_invitation: None, host: Any, token: str) -> None:
    invite(signed_in(host))
    answer = register(f"/register/{token}/")
    assert answer.status_code == 404
    assert get_user_model().objects.count() == 1


def test_invited_registrations_are_throttled_per_network(
    by_invitation: None, host: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        RegistrationThrottle, "THROTTLE_RATES", {"user": "1000/min", "registration": "1/hour"}
    )
    browser = signed_in(host)
    first, second = invite(browser), invite(browser)
    assert register(first, "one").status_code == 302
    throttled = register(second, "two")
    assert throttled.status_code == 429
    assert "registrations per address" in throttled.content.decode()
    assert accounts_named("two") == 0


def test_every_form_needs_its_csrf_token(by_invitation: None, host: Any) -> None:
    path = invite(signed_in(host))
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(host)
    assert strict.post("/account/invitations/").status_code == 403
    invitation = Invitation.objects.get()
    assert strict.post(f"/account/invitations/{invitation.pk}/withdraw/").status_code == 403
    assert register(path, client=Client(enforce_csrf_checks=True)).status_code == 403
    assert Invitation.objects.get().used is None


@pytest.mark.django_db(transaction=True)
def test_one_link_used_twice_at_once_makes_one_account(settings: Any) -> None:
    settings.REGISTRATION = "invitation"
    host: Any = UserFactory(username="root", is_staff=True)
    _, token = invitations.invitation_create(user=host)
    answers: list[int] = []
    start = threading.Barrier(2)

    def use(username: str) -> None:
        start.wait()
        try:
            answers.append(register(f"/register/{token}/", username).status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=use, args=(f"racer{n}",)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(answers) == [302, 404]
    assert get_user_model().objects.filter(username__startswith="racer").count() == 1


@pytest.mark.parametrize(
    ("environment", "mode"),
    [
        ({}, "closed"),
        ({"REGISTRATION_OPEN": "true"}, "open"),
        ({"REGISTRATION": "invitation"}, "invitation"),
    ],
)
def test_the_mode_comes_from_the_environment(
    tmp_path: Path, environment: dict[str, str], mode: str
) -> None:
    started = settings_started(tmp_path, ["REGISTRATION"], **environment)
    assert started.returncode == 0, started.stderr
    assert started.stdout.strip().splitlines()[-1] == mode


@pytest.mark.parametrize(
    ("environment", "problem"),
    [
        ({"REGISTRATION": "invite"}, "REGISTRATION must be closed, invitation or open"),
        ({"INVITATION_DAYS": "0"}, "INVITATION_DAYS must be 1 or more"),
    ],
)
def test_a_mistyped_mode_stops_the_start_saying_why(
    tmp_path: Path, environment: dict[str, str], problem: str
) -> None:
    started = settings_started(tmp_path, ["REGISTRATION"], **environment)
    assert started.returncode != 0
    assert problem in started.stderr
    assert "Traceback" not in started.stderr
