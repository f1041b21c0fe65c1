"""The passkeys' JSON endpoints as an outsider posts to them: signed out, half-way through a
sign-in, signed in, with bodies that are no ceremony's answer. Each answers a JSON error object
below 500 and changes nothing; none signs anybody in."""

import json
from typing import Any

import pytest
from django.test import Client, RequestFactory
from django_otp_webauthn.models import WebAuthnCredential

from factors import services, webauthn
from tests.helpers import totp_code
from tests.web.helpers import PASSWORD

BASE = "/account/passkeys/"
ENDPOINTS = [
    "registration/begin/",
    "registration/complete/",
    "authentication/begin/",
    "authentication/complete/",
]
BODIES = [
    ("application/json", b""),
    ("application/json", b"{"),
    ("application/json", b"[]"),
    ("application/json", b'"text"'),
    ("application/json", b"null"),
    ("application/json", json.dumps({"id": "x", "rawId": "\x00", "type": "public-key"}).encode()),
    ("application/json", json.dumps({"id": "A" * 100_000, "response": {}}).encode()),
    (
        "application/json",
        json.dumps({"response": {"clientDataJSON": "!!", "attestationObject": 5}}).encode(),
    ),
    ("application/x-www-form-urlencoded", b"id=1&response=2"),
    ("text/plain", "\u2028ü\x00".encode()),
]


def _answers(client: Client, endpoint: str) -> list[Any]:
    answers = []
    for content_type, body in BODIES:
        answer = client.post(BASE + endpoint, body, content_type=content_type)
        assert answer.status_code < 500, (endpoint, body[:40], answer.status_code)
        if answer.status_code >= 400:
            assert "detail" in answer.json()
        answers.append(answer)
    return answers


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_signed_out_nothing_begins_and_nobody_signs_in(
    client: Client, endpoint: str, db: None
) -> None:
    for answer in _answers(client, endpoint):
        assert answer.status_code in (400, 401, 403, 404)
    assert client.get("/podcasts/").status_code == 302
    assert WebAuthnCredential.objects.count() == 0


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_signed_in_junk_adds_no_passkey(page: Client, endpoint: str) -> None:
    _answers(page, endpoint)
    assert WebAuthnCredential.objects.count() == 0


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_half_way_through_a_sign_in_junk_finishes_nothing(
    client: Client, person: Any, endpoint: str
) -> None:
    device = services.app_begin(user=person)
    services.app_confirm(user=person, device_id=device.pk, code=totp_code(device))
    assert client.post("/login/", {"username": "alice", "password": PASSWORD})["Location"] == (
        "/login/second/"
    )
    _answers(client, endpoint)
    assert client.get("/podcasts/").status_code == 302
    assert WebAuthnCredential.objects.count() == 0


def test_a_begun_sign_in_is_offered_the_accounts_passkeys_only(
    client: Client, person: Any, stranger: Any
) -> None:
    device = services.app_begin(user=person)
    services.app_confirm(user=person, device_id=device.pk, code=totp_code(device))
    assert client.post(BASE + "authentication/begin/").status_code == 403  # nobody's step
    client.post("/login/", {"username": "alice", "password": PASSWORD})
    options = client.post(BASE + "authentication/begin/").json()
    assert options["rpId"] == "testserver"
    assert options["allowCredentials"] == []  # alice has no passkey; mallory's are not named


def test_a_session_not_verified_adds_no_passkey(page: Client, person: Any) -> None:
    device = services.app_begin(user=person)
    services.app_confirm(user=person, device_id=device.pk, code=totp_code(device))
    answer = page.post(BASE + "registration/begin/")  # signed in before the app was added
    assert answer.status_code == 403
    assert "verify" in answer.json()["detail"]


def test_the_endpoints_take_posts_only(page: Client) -> None:
    for endpoint in ENDPOINTS:
        assert page.get(BASE + endpoint).status_code == 405


def test_every_endpoint_and_factor_form_needs_its_csrf_token(person: Any) -> None:
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(person)
    for path in [BASE + endpoint for endpoint in ENDPOINTS] + [
        "/account/factors/app/",
        "/account/factors/app/confirm/",
        "/account/factors/recovery-codes/",
        "/account/factors/remove/",
        "/login/second/",
    ]:
        assert browser.post(path, {"password": PASSWORD}).status_code == 403, path
    assert WebAuthnCredential.objects.count() == 0


@pytest.mark.parametrize(
    ("host", "secure", "origin", "rp_id"),
    [
        ("sync.example.org", True, "https://sync.example.org", "sync.example.org"),
        ("sync.example.org:8443", True, "https://sync.example.org:8443", "sync.example.org"),
        ("nas.local:8000", False, "http://nas.local:8000", "nas.local"),
        ("localhost:8000", False, "http://localhost:8000", "localhost"),
    ],
)
def test_a_passkey_belongs_to_the_host_and_origin_the_browser_used(
    settings: Any, host: str, secure: bool, origin: str, rp_id: str
) -> None:
    settings.ALLOWED_HOSTS = [host.split(":")[0]]
    request = RequestFactory().get("/", HTTP_HOST=host, secure=secure)
    assert webauthn.Helper(request).get_allowed_origins() == [origin]
    assert webauthn.Helper(request).get_relying_party_domain() == rp_id
