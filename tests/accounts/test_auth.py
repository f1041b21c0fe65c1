"""Log in, refresh, log out, login throttling and password hashing (docs/api.md,
"Authentication")."""

import re
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt
import pytest
from django.contrib.auth import get_user_model
from django.test import override_settings
from rest_framework.settings import api_settings
from rest_framework.test import APIClient

from accounts import active as auth
from accounts.services import refresh_token_for
from tests.factories import UserFactory
from tests.helpers import assert_error, at_once

PASSWORD = "correct horse battery staple"
FEED = "https://podnews.net/rss"
RFC3339_UTC_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
LOGIN_RATE = str(api_settings.DEFAULT_THROTTLE_RATES["login"])  # 10/min by default
LOGIN_LIMIT = int(LOGIN_RATE.split("/")[0])


def assert_unauthorized(response: Any) -> None:
    assert_error(response, 401, "User not authorized")
    assert response["WWW-Authenticate"].startswith("Bearer")


@pytest.fixture
def member(db: None) -> Any:
    return UserFactory(with_password=PASSWORD)


def login(client: APIClient, username: str, password: str = PASSWORD, **extra: Any) -> Any:
    return client.post(
        "/v1/auth/login", {"username": username, "password": password}, format="json", **extra
    )


def refresh(client: APIClient, token: str) -> Any:
    return client.post("/v1/auth/refresh", {"refresh_token": token}, format="json")


def bearer(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def parse_timestamp(value: str) -> datetime:
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


# --- The access token's user: checked, and remembered for a while ------------------------------


@pytest.fixture
def member_client(member: Any) -> APIClient:
    return bearer(str(refresh_token_for(member).access_token))


def deactivated_elsewhere(user: Any) -> None:
    """As another web process would see it: update() sends no signal to this one."""
    get_user_model().objects.filter(pk=user.pk).update(is_active=False)


def test_a_remembered_user_is_not_read_again(member_client, django_assert_num_queries):
    # The user, the list's count, and the account's activity (noted once an hour).
    with django_assert_num_queries(3) as first:
        assert member_client.get("/v1/subscriptions").status_code == 200
    with django_assert_num_queries(1) as second:  # the list's count
        assert member_client.get("/v1/subscriptions").status_code == 200

    assert "auth_user" in first.captured_queries[0]["sql"]
    assert "auth_user" not in second.captured_queries[0]["sql"]


@override_settings(AUTH_USER_CACHE_SECONDS=2)
def test_a_deactivation_elsewhere_takes_effect_within_the_cache_lifetime(member, member_client):
    assert member_client.get("/v1/subscriptions").status_code == 200

    deactivated_elsewhere(member)
    remembered = member_client.get("/v1/subscriptions")
    time.sleep(2.1)
    expired = member_client.get("/v1/subscriptions")

    assert remembered.status_code == 200
    assert_unauthorized(expired)


@override_settings(AUTH_USER_CACHE_SECONDS=0)
def test_without_the_cache_a_deactivation_takes_effect_at_once(member, member_client):
    assert member_client.get("/v1/subscriptions").status_code == 200

    deactivated_elsewhere(member)

    assert_unauthorized(member_client.get("/v1/subscriptions"))


def test_a_deactivation_in_this_process_takes_effect_at_once(member, member_client):
    assert member_client.get("/v1/subscriptions").status_code == 200

    member.is_active = False
    member.save()

    assert_unauthorized(member_client.get("/v1/subscriptions"))


def test_a_user_remembered_again_before_the_deactivation_commits_is_forgotten_on_commit(
    member, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        member.is_active = False
        member.save()
        # A request of this process reading the row before the commit still finds it active.
        auth.active_users.add(member.pk, auth.password_mark(member.password))

    assert auth.active_users.mark(member.pk) is None


def test_a_removed_users_token_is_refused_at_once(member, member_client):
    assert member_client.get("/v1/subscriptions").status_code == 200

    member.delete()

    assert_unauthorized(member_client.get("/v1/subscriptions"))


def test_an_inactive_user_is_not_remembered(member, member_client):
    member.is_active = False
    member.save()
    assert_unauthorized(member_client.get("/v1/subscriptions"))

    get_user_model().objects.filter(pk=member.pk).update(is_active=True)

    assert member_client.get("/v1/subscriptions").status_code == 200


def test_a_verified_token_is_still_refused_once_it_expires(member):
    token = refresh_token_for(member).access_token
    # `exp` is in whole seconds: 2 s from now leaves at least 1 s for the first request.
    token.set_exp(lifetime=timedelta(seconds=2))
    client = bearer(str(token))
    assert client.get("/v1/subscriptions").status_code == 200  # verified, and remembered

    time.sleep(max(token["exp"] - time.time(), 0) + 0.05)

    assert_unauthorized(client.get("/v1/subscriptions"))


def test_a_token_that_failed_verification_is_refused_every_time(member):
    token = str(refresh_token_for(member).access_token)
    forged = bearer(token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB"))

    for _ in range(2):
        assert_unauthorized(forged.get("/v1/subscriptions"))


# --- Login ------------------------------------------------------------------------------------


def test_login_answers_tokens(anon, member):
    response = login(anon, member.username)

    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {
        "access_token",
        "expires_in",
        "refresh_token",
        "refresh_expires",
        "refresh_endpoint",
    }
    assert body["expires_in"] == 3600
    assert body["refresh_endpoint"] == "/v1/auth/refresh"
    assert isinstance(body["access_token"], str)
    assert isinstance(body["refresh_token"], str)
    assert body["access_token"] != body["refresh_token"]
    assert RFC3339_UTC_MS.match(body["refresh_expires"])
    expected = datetime.now(UTC) + timedelta(days=30)
    assert abs(parse_timestamp(body["refresh_expires"]) - expected) < timedelta(minutes=1)


def test_access_token_lives_one_hour(anon, member):
    token = login(anon, member.username).json()["access_token"]

    claims = jwt.decode(token, options={"verify_signature": False})

    assert claims["exp"] - time.time() == pytest.approx(3600, abs=60)


def test_access_token_from_login_works_on_subscriptions(anon, member):
    client = bearer(login(anon, member.username).json()["access_token"])

    added = client.post("/v1/subscriptions", {"subscriptions": [{"feed_url": FEED}]}, format="json")
    guid = added.json()["success"][0]["guid"]
    got = client.get(f"/v1/subscriptions/{guid}")

    assert added.status_code == 200, added.content
    assert got.status_code == 200, got.content
    assert got.json()["feed_url"] == FEED
    assert member.subscriptions.count() == 1


def test_wrong_password_is_401(anon, member):
    assert_unauthorized(login(anon, member.username, "wrong password"))


def test_unknown_user_is_401_like_a_wrong_password(anon, member):
    wrong_password = login(anon, member.username, "wrong password")

    unknown_user = login(anon, "nobody-" + uuid.uuid4().hex, PASSWORD)

    assert_unauthorized(unknown_user)
    assert unknown_user.content == wrong_password.content


def test_inactive_user_cannot_log_in(anon, member):
    member.is_active = False
    member.save()

    assert_unauthorized(login(anon, member.username))


def test_user_without_a_usable_password_cannot_log_in(anon, user):
    assert_unauthorized(login(anon, user.username, "!"))


def test_password_is_case_sensitive(anon, member):
    assert_unauthorized(login(anon, member.username, PASSWORD.upper()))


BAD_LOGIN_BODIES = {
    "empty object": {},
    "no password": {"username": "someone"},
    "no username": {"password": PASSWORD},
    "username number": {"username": 5, "password": PASSWORD},
    "username array": {"username": ["someone"], "password": PASSWORD},
    "username object": {"username": {"name": "someone"}, "password": PASSWORD},
    "username null": {"username": None, "password": PASSWORD},
    "password number": {"username": "someone", "password": 1234},
    "password null": {"username": "someone", "password": None},
    "array": [{"username": "someone", "password": PASSWORD}],
    "string": "someone",
}


@pytest.mark.parametrize("body", BAD_LOGIN_BODIES.values(), ids=BAD_LOGIN_BODIES.keys())
def test_login_body_that_cannot_be_validated_is_405(anon, db, body):
    response = anon.post("/v1/auth/login", body, format="json")

    body = assert_error(response, 405)
    assert body["message"].startswith("Input could not be validated")


@pytest.mark.parametrize(
    "raw", [b"", b"{", b"\xff\xfe", b'{"username": NaN, "password": "x"}', b"[" * 100_000]
)
def test_login_malformed_json_is_405(anon, db, raw):
    response = anon.post("/v1/auth/login", raw, content_type="application/json")

    assert_error(response, 405)


def test_login_body_not_json_is_415(anon, member):
    response = anon.post(
        "/v1/auth/login",
        f"username={member.username}&password={PASSWORD}",
        content_type="application/x-www-form-urlencoded",
    )

    assert_error(response, 415)


def test_there_is_no_self_registration(anon, db):
    body = {"username": "newcomer", "password": PASSWORD}

    for path in ["/v1/auth/register", "/v1/auth/signup", "/v1/users", "/v1/register"]:
        assert_error(anon.post(path, body, format="json"), 404)

    assert not get_user_model().objects.filter(username="newcomer").exists()


# --- Refresh ----------------------------------------------------------------------------------


@pytest.fixture
def tokens(anon: APIClient, member: Any) -> dict[str, Any]:
    response = login(anon, member.username)
    assert response.status_code == 200, response.content
    return response.json()


def test_refresh_answers_new_tokens(anon, tokens):
    response = refresh(anon, tokens["refresh_token"])

    assert response.status_code == 200, response.content
    body = response.json()
    assert {"access_token", "expires_in", "refresh_token", "refresh_expires"} <= set(body)
    assert body["expires_in"] == 3600
    assert body["refresh_token"] != tokens["refresh_token"]
    assert body["access_token"] != tokens["access_token"]
    assert RFC3339_UTC_MS.match(body["refresh_expires"])


def test_refreshed_access_token_works(anon, tokens):
    access = refresh(anon, tokens["refresh_token"]).json()["access_token"]

    response = bearer(access).post(
        "/v1/subscriptions", {"subscriptions": [{"feed_url": FEED}]}, format="json"
    )

    assert response.status_code == 200, response.content


def test_refresh_token_is_revoked_once_used(anon, tokens):
    first = refresh(anon, tokens["refresh_token"])

    again = refresh(anon, tokens["refresh_token"])

    assert first.status_code == 200, first.content
    assert_unauthorized(again)


def test_rotated_refresh_tokens_chain(anon, tokens):
    token = tokens["refresh_token"]

    for _ in range(3):
        response = refresh(anon, token)
        assert response.status_code == 200, response.content
        token = response.json()["refresh_token"]


def test_access_token_is_not_a_refresh_token(anon, tokens):
    assert_unauthorized(refresh(anon, tokens["access_token"]))


def refresh_claims(user: Any, **claims: Any) -> dict[str, Any]:
    now = int(time.time())
    return {
        "token_type": "refresh",
        "exp": now + 3600,
        "iat": now - 1,
        "jti": uuid.uuid4().hex,
        "user_id": str(user.pk),
        **claims,
    }


def test_forged_refresh_token_is_401(anon, member):
    forged = jwt.encode(
        refresh_claims(member), "another-key-that-is-long-enough-for-hs256-00", algorithm="HS256"
    )

    assert_unauthorized(refresh(anon, forged))


def test_unsigned_refresh_token_is_401(anon, member):
    unsigned = jwt.encode(refresh_claims(member), key="", algorithm="none")

    assert_unauthorized(refresh(anon, unsigned))


def test_expired_refresh_token_is_401(anon, member):
    token = refresh_token_for(member)
    token.set_exp(lifetime=-timedelta(seconds=1))

    assert_unauthorized(refresh(anon, str(token)))


@pytest.mark.parametrize("token", ["garbage", "a.b.c", "x" * 4000])
def test_unknown_refresh_token_is_401(anon, db, token):
    assert_unauthorized(refresh(anon, token))


def test_refresh_token_of_a_deactivated_user_is_401(anon, member, tokens):
    member.is_active = False
    member.save()

    assert_unauthorized(refresh(anon, tokens["refresh_token"]))


def test_refresh_token_of_a_removed_user_is_401(anon, member, tokens):
    member.delete()

    assert_unauthorized(refresh(anon, tokens["refresh_token"]))


@pytest.mark.parametrize("body", [{}, {"refresh_token": 5}, {"refresh_token": None}, []])
def test_refresh_body_that_cannot_be_validated_is_405(anon, db, body):
    assert_error(anon.post("/v1/auth/refresh", body, format="json"), 405)


# --- Logout -----------------------------------------------------------------------------------


def test_logout_revokes_the_refresh_token(anon, tokens):
    response = anon.post(
        "/v1/auth/logout", {"refresh_token": tokens["refresh_token"]}, format="json"
    )

    assert response.status_code == 204, response.content
    assert response.content == b""
    assert_unauthorized(refresh(anon, tokens["refresh_token"]))


def test_logout_leaves_other_sessions_alone(anon, member, tokens):
    other_session = login(anon, member.username).json()

    anon.post("/v1/auth/logout", {"refresh_token": tokens["refresh_token"]}, format="json")

    assert refresh(anon, other_session["refresh_token"]).status_code == 200


@pytest.mark.parametrize("body", [{}, {"refresh_token": 5}, {"refresh_token": None}])
def test_logout_body_that_cannot_be_validated_is_405(anon, db, body):
    assert_error(anon.post("/v1/auth/logout", body, format="json"), 405)


# --- Throttling -------------------------------------------------------------------------------


def exhaust(client: APIClient, username: str, **extra: Any) -> None:
    for _ in range(LOGIN_LIMIT):
        assert login(client, username, "wrong password", **extra).status_code == 401


def test_login_is_throttled_per_address_and_username(anon, member):
    exhaust(anon, member.username)

    response = login(anon, member.username, "wrong password")

    body = assert_error(response, 429)
    assert body["message"].startswith(f"Rate limit exceeded: at most {LOGIN_RATE}")
    assert 0 < int(response["Retry-After"]) <= 60


def test_throttled_login_refuses_even_the_right_password(anon, member):
    exhaust(anon, member.username)

    response = login(anon, member.username)

    assert_error(response, 429)
    assert "access_token" not in response.json()


def test_successful_logins_count_as_attempts(anon, member):
    for _ in range(LOGIN_LIMIT):
        assert login(anon, member.username).status_code == 200

    assert_error(login(anon, member.username), 429)


def test_login_throttle_leaves_other_usernames_alone(anon, member):
    exhaust(anon, "someone-else")

    assert login(anon, member.username).status_code == 200


def test_login_throttle_leaves_other_addresses_alone(anon, member):
    exhaust(anon, member.username, REMOTE_ADDR="192.0.2.1")

    assert login(anon, member.username, REMOTE_ADDR="192.0.2.2").status_code == 200
    assert_error(login(anon, member.username, REMOTE_ADDR="192.0.2.1"), 429)


def test_login_throttle_is_not_escaped_with_a_forged_forwarded_header(anon, member):
    """The client address is the peer's: a header the client writes itself must not reset it."""
    for n in range(LOGIN_LIMIT):
        forwarded = f"198.51.100.{n}"
        response = login(anon, member.username, "wrong", HTTP_X_FORWARDED_FOR=forwarded)
        assert response.status_code == 401

    response = login(anon, member.username, "wrong", HTTP_X_FORWARDED_FOR="198.51.100.250")

    assert_error(response, 429)


def test_refresh_is_not_counted_as_a_login_attempt(anon, member, tokens):
    token = tokens["refresh_token"]
    for _ in range(LOGIN_LIMIT):
        response = refresh(anon, token)
        assert response.status_code == 200, response.content
        token = response.json()["refresh_token"]

    assert login(anon, member.username).status_code == 200


# --- Passwords --------------------------------------------------------------------------------


def test_passwords_are_hashed_with_argon2(member):
    assert member.password.startswith("argon2")
    assert PASSWORD not in member.password
    assert member.check_password(PASSWORD)


def test_argon2_is_the_hasher_outside_the_tests_too():
    from config.settings import base

    assert base.PASSWORD_HASHERS[0] == "django.contrib.auth.hashers.Argon2PasswordHasher"


def test_login_keeps_the_argon2_hash(anon, member):
    assert login(anon, member.username).status_code == 200

    member.refresh_from_db()
    assert member.password.startswith("argon2")


@pytest.mark.django_db(transaction=True)
def test_two_refreshes_racing_with_one_token_give_one_new_token():
    member: Any = UserFactory()
    refresh = str(refresh_token_for(member))

    def run() -> int:
        client = APIClient()
        return client.post(
            "/v1/auth/refresh", {"refresh_token": refresh}, format="json"
        ).status_code

    statuses = at_once(run, run, run, run)

    assert sorted(statuses) == [200, 401, 401, 401]
