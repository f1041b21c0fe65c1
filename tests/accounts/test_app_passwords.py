"""App passwords (docs/api.md, "Authentication"; docs/web.md, "Account and app passwords"): made
and named by their person, accepted by /v1/auth/login, refused at once in every form once
revoked, and never the way to the pages."""

import hashlib
import time
from datetime import timedelta
from functools import partial
from typing import Any

import pytest
from django.db import IntegrityError, transaction
from rest_framework.test import APIClient

from accounts import services
from accounts.models import AppPassword
from accounts.throttles import LoginThrottle
from core import clock as service_clock
from core.exceptions import InvalidInput, NotFound
from tests.accounts.test_auth import PASSWORD, assert_unauthorized, bearer, login, refresh
from tests.factories import UserFactory
from tests.helpers import Clock, at_once


@pytest.fixture
def member(db: None) -> Any:
    return UserFactory(username="member", with_password=PASSWORD)


def test_made_once_stored_as_a_digest_and_listed_without_it(member: Any) -> None:
    made, secret = services.app_password_create(user=member, name="  AntennaPod  ")
    assert made.name == "AntennaPod"
    assert len(secret) == 29  # six groups of four and their dashes
    stored = AppPassword.objects.get(pk=made.pk)
    typed = secret.replace("-", "")
    assert stored.digest == hashlib.sha256(typed.encode()).hexdigest()
    assert secret not in str(AppPassword.objects.filter(pk=made.pk).values().get())
    _, another = services.app_password_create(user=member, name="Kasts")
    assert another != secret


@pytest.mark.parametrize(
    ("name", "told"),
    [
        ("", "Give the app password a name"),
        ("   ", "Give the app password a name"),
        ("x" * 101, "at most 100 characters"),
        ("a\x00b", "control characters"),
        ("a\nb", "control characters"),
        ("\ud800", "control characters"),
    ],
)
def test_a_bad_name_is_refused(member: Any, name: str, told: str) -> None:
    with pytest.raises(InvalidInput, match=told):
        services.app_password_create(user=member, name=name)
    assert not AppPassword.objects.exists()


def test_names_are_unique_per_person_and_any_unicode(member: Any) -> None:
    other = UserFactory()
    services.app_password_create(user=member, name="Téléphone 📱")
    services.app_password_create(user=other, name="Téléphone 📱")
    with pytest.raises(InvalidInput, match="already"):
        services.app_password_create(user=member, name="Téléphone 📱")


def test_the_cap_is_told_by_its_name(member: Any, settings: Any) -> None:
    settings.MAX_APP_PASSWORDS = 2
    services.app_password_create(user=member, name="one")
    services.app_password_create(user=member, name="two")
    with pytest.raises(InvalidInput, match="MAX_APP_PASSWORDS"):
        services.app_password_create(user=member, name="three")


def test_the_database_refuses_a_blank_name_or_a_bad_digest(member: Any) -> None:
    for fields in ({"name": " ", "digest": "a" * 64}, {"name": "x", "digest": "not hex"}):
        with pytest.raises(IntegrityError), transaction.atomic():
            AppPassword.objects.create(user=member, created=member.date_joined, **fields)


def test_login_with_an_app_password_then_use_and_refresh_its_tokens(member: Any) -> None:
    _, secret = services.app_password_create(user=member, name="app")
    answer = login(APIClient(), "member", secret)
    assert answer.status_code == 200
    assert bearer(answer.json()["access_token"]).get("/v1/subscriptions").status_code == 200
    renewed = refresh(APIClient(), answer.json()["refresh_token"])
    assert renewed.status_code == 200
    assert bearer(renewed.json()["access_token"]).get("/v1/subscriptions").status_code == 200
    # Typed without its dashes, or in capitals, it is the same password.
    assert login(APIClient(), "member", secret.replace("-", "").upper()).status_code == 200


def test_the_account_password_keeps_working_beside_app_passwords(member: Any) -> None:
    services.app_password_create(user=member, name="app")
    assert login(APIClient(), "member", PASSWORD).status_code == 200


def test_an_app_password_is_only_its_persons(member: Any) -> None:
    _, secret = services.app_password_create(user=member, name="app")
    UserFactory(username="other", with_password=PASSWORD)
    assert_unauthorized(login(APIClient(), "other", secret))
    assert_unauthorized(login(APIClient(), "MEMBER", secret))


def test_revoking_refuses_its_access_and_refresh_tokens_at_once(member: Any) -> None:
    made, secret = services.app_password_create(user=member, name="app")
    tokens = login(APIClient(), "member", secret).json()
    own = login(APIClient(), "member", PASSWORD).json()
    app = bearer(tokens["access_token"])
    assert app.get("/v1/subscriptions").status_code == 200  # the user is now remembered

    services.app_password_revoke(user=member, app_password_id=made.pk)

    assert_unauthorized(app.get("/v1/subscriptions"))
    assert_unauthorized(refresh(APIClient(), tokens["refresh_token"]))
    assert_unauthorized(login(APIClient(), "member", secret))
    # The account's own tokens are another matter.
    assert bearer(own["access_token"]).get("/v1/subscriptions").status_code == 200


def test_a_deactivated_account_refuses_app_password_tokens_at_once(member: Any) -> None:
    _, secret = services.app_password_create(user=member, name="app")
    app = bearer(login(APIClient(), "member", secret).json()["access_token"])
    assert app.get("/v1/subscriptions").status_code == 200
    type(member).objects.filter(pk=member.pk).update(is_active=False)  # no signal
    assert_unauthorized(app.get("/v1/subscriptions"))


def test_revoking_another_persons_or_an_unknown_one_is_not_found(member: Any) -> None:
    other = UserFactory()
    theirs, _ = services.app_password_create(user=other, name="app")
    with pytest.raises(NotFound):
        services.app_password_revoke(user=member, app_password_id=theirs.pk)
    with pytest.raises(NotFound):
        services.app_password_revoke(user=member, app_password_id=2**62)
    assert AppPassword.objects.filter(pk=theirs.pk).exists()


def test_last_use_is_written_at_most_once_a_minute(member: Any, clock: Clock) -> None:
    made, secret = services.app_password_create(user=member, name="app")
    assert made.last_used is None
    app = bearer(login(APIClient(), "member", secret).json()["access_token"])
    first = AppPassword.objects.get(pk=made.pk).last_used
    assert first == clock.now
    clock.advance(seconds=30)
    app.get("/v1/subscriptions")
    assert AppPassword.objects.get(pk=made.pk).last_used == first
    clock.advance(seconds=31)
    app.get("/v1/subscriptions")
    assert AppPassword.objects.get(pk=made.pk).last_used == first + timedelta(seconds=61)


def test_a_request_with_an_app_passwords_token_is_one_query_more(
    member: Any, clock: Clock, django_assert_max_num_queries: Any
) -> None:
    _, secret = services.app_password_create(user=member, name="app")
    app = bearer(login(APIClient(), "member", secret).json()["access_token"])
    own = bearer(login(APIClient(), "member", PASSWORD).json()["access_token"])
    own.get("/v1/subscriptions")
    with django_assert_max_num_queries(10) as plain:
        own.get("/v1/subscriptions")
    with django_assert_max_num_queries(len(plain.captured_queries) + 1):
        app.get("/v1/subscriptions")


def test_wrong_app_passwords_count_against_the_login_throttle(
    member: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(LoginThrottle, "THROTTLE_RATES", {"user": "1000/min", "login": "3/min"})
    _, secret = services.app_password_create(user=member, name="app")
    client = APIClient()
    for _ in range(3):
        login(client, "member", "aaaa-bbbb-cccc-dddd-eeee-ffff")
    assert login(client, "member", secret).status_code == 429


@pytest.mark.parametrize(
    "password", ["", "x", "a" * 24, "ab\x00cd", "aaaa-bbbb-cccc-dddd-eeee-ffff-gggg", "🎧" * 24]
)
def test_odd_passwords_are_refused_plainly(member: Any, password: str) -> None:
    services.app_password_create(user=member, name="app")
    response = login(APIClient(), "member", password)
    assert response.status_code in (401, 405)


@pytest.mark.parametrize(
    ("username", "password", "told"),
    [
        ("new person", PASSWORD, "username"),
        ("x" * 151, PASSWORD, "150"),
        ("bob", "short", "too short"),
        ("bob", "password", "too common"),
        ("bob", "12345678901", "entirely numeric"),
        ("MEMBER", PASSWORD, "already taken"),
    ],
)
def test_registration_refuses_with_reasons(
    member: Any, username: str, password: str, told: str
) -> None:
    with pytest.raises(InvalidInput, match=told):
        services.user_register(username=username, password=password)


def test_registration_makes_an_active_account_with_a_hashed_password(db: None) -> None:
    user = services.user_register(username="zoë.ü", password=PASSWORD)
    assert user.is_active
    assert user.password.startswith("argon2")
    assert login(APIClient(), "zoë.ü", PASSWORD).status_code == 200


@pytest.mark.usefixtures("transactional_db")
def test_parallel_creations_at_the_cap_end_exactly_at_it(
    member: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """20 at once with 45 made: 5 are made, 15 refused by the named limit, never 51."""
    settings.MAX_APP_PASSWORDS = 50
    AppPassword.objects.bulk_create(
        AppPassword(
            user=member,
            name=f"made {n}",
            digest=hashlib.sha256(f"made {n}".encode()).hexdigest(),
            created=member.date_joined,
        )
        for n in range(45)
    )
    # Each creation dawdles where it stamps the new row, after counting: without a lock held
    # from the count to the insert, all 20 would count 45.
    now = service_clock.now

    def slow_now() -> Any:
        time.sleep(0.05)
        return now()

    monkeypatch.setattr(service_clock, "now", slow_now)

    def create(n: int) -> str:
        try:
            services.app_password_create(user=member, name=f"parallel {n}")
        except InvalidInput as exc:
            return exc.message
        return "made"

    results = at_once(*[partial(create, n) for n in range(20)])

    assert results.count("made") == 5, results
    refused = [told for told in results if told != "made"]
    assert len(refused) == 15
    assert all("MAX_APP_PASSWORDS" in told and "50 app passwords" in told for told in refused)
    assert AppPassword.objects.filter(user=member).count() == 50
