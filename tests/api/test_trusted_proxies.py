"""X-Forwarded-For and X-Forwarded-Proto are believed from TRUSTED_PROXIES only
(api.middleware.TrustedProxiesMiddleware; docs/operations.md, "Behind a proxy"): whoever reaches
the server directly chooses neither the address the throttles count nor HTTPS. Under gunicorn
with the production settings: tests/e2e/test_proxy_headers.py."""

import base64
from typing import Any

import pytest
from django.http import HttpRequest, HttpResponse
from django.test import RequestFactory
from rest_framework.settings import api_settings
from rest_framework.test import APIClient

from api.middleware import TrustedProxiesMiddleware, trusted_proxy
from tests.factories import UserFactory
from tests.helpers import assert_error

PASSWORD = "correct horse battery staple"
LOGIN_LIMIT = int(str(api_settings.DEFAULT_THROTTLE_RATES["login"]).split("/")[0])
DIRECT = "203.0.113.9"  # a client that reaches the server without the proxy
PROXY = "10.1.2.3"


@pytest.fixture
def behind_a_proxy(settings: Any) -> None:
    """One proxy in front (NUM_PROXIES=1), on another host of 10.0.0.0/8."""
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    settings.TRUSTED_PROXIES = ["127.0.0.1", "::1", "10.0.0.0/8"]


@pytest.fixture
def alice(db: None) -> Any:
    return UserFactory(username="alice", with_password=PASSWORD)


def basic(password: str) -> str:
    return "Basic " + base64.b64encode(f"alice:{password}".encode()).decode()


def v1_login(password: str, **extra: Any) -> Any:
    body = {"username": "alice", "password": password}
    return APIClient().post("/v1/auth/login", body, format="json", **extra)


def gpodder_login(password: str, **extra: Any) -> Any:
    return APIClient().post(
        "/api/2/auth/alice/login.json", b"", content_type="plain/text",
        HTTP_AUTHORIZATION=basic(password), **extra,
    )  # fmt: skip


# --- Who is a trusted proxy ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("peer", "trusted"),
    [
        ("127.0.0.1", True),
        ("::1", True),
        ("::ffff:127.0.0.1", True),  # a dual-stack socket's IPv4 peer
        ("10.200.0.1", True),
        ("fe80::1%eth0", False),
        ("127.0.0.2", False),
        ("203.0.113.9", False),
        ("11.0.0.1", False),
        ("not an address", False),
        ("", True),  # a Unix socket's peer: a process of this machine
    ],
)
@pytest.mark.usefixtures("behind_a_proxy")
def test_a_peer_is_trusted_when_trusted_proxies_name_it(peer: str, trusted: bool) -> None:
    assert trusted_proxy(peer) is trusted


def test_by_default_only_loopback_is_trusted(settings: Any) -> None:
    assert settings.TRUSTED_PROXIES == ["127.0.0.1", "::1"]
    assert trusted_proxy("127.0.0.1")
    assert trusted_proxy("::1")
    assert not trusted_proxy("10.0.0.1")
    assert not trusted_proxy("192.168.1.2")


@pytest.mark.usefixtures("behind_a_proxy")
@pytest.mark.parametrize(("peer", "kept"), [(DIRECT, False), (PROXY, True)])
def test_the_proxy_headers_of_an_untrusted_peer_are_dropped(peer: str, kept: bool) -> None:
    headers: dict[str, Any] = {
        "HTTP_X_FORWARDED_FOR": "198.51.100.1",
        "HTTP_X_FORWARDED_PROTO": "https",
        "HTTP_X_FORWARDED_HOST": "evil.example",
        "HTTP_X_FORWARDED_PORT": "443",
        "HTTP_FORWARDED": "for=198.51.100.1;proto=https",
    }
    seen: dict[str, Any] = {}

    def view(request: HttpRequest) -> HttpResponse:
        seen.update(request.META)
        seen["secure"] = request.is_secure()
        return HttpResponse()

    request = RequestFactory().get("/", REMOTE_ADDR=peer, HTTP_USER_AGENT="app", **headers)
    TrustedProxiesMiddleware(view)(request)

    assert all((name in seen) is kept for name in headers)
    assert seen["secure"] is kept
    assert seen["HTTP_USER_AGENT"] == "app"  # nothing else is touched


# --- A direct client's forged headers change nothing -----------------------------------------


@pytest.mark.usefixtures("behind_a_proxy")
@pytest.mark.parametrize("attempt", [v1_login, gpodder_login])
def test_forged_forwarded_for_does_not_escape_the_login_throttle(alice: Any, attempt: Any) -> None:
    """The red team's 40 wrong passwords, each with its own X-Forwarded-For: the peer's address
    is counted, and the lockout comes."""
    statuses = [
        attempt("wrong", REMOTE_ADDR=DIRECT, HTTP_X_FORWARDED_FOR=f"198.51.100.{n}").status_code
        for n in range(LOGIN_LIMIT + 2)
    ]
    assert statuses == [401] * LOGIN_LIMIT + [429] * 2

    response = attempt(PASSWORD, REMOTE_ADDR=DIRECT, HTTP_X_FORWARDED_FOR="198.51.100.250")
    assert_error(response, 429)
    # Another client behind the proxy is its own address, as ever.
    assert (
        attempt(PASSWORD, REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR="198.51.100.250").status_code
        == 200
    )


@pytest.mark.usefixtures("behind_a_proxy")
def test_forged_forwarded_proto_makes_nothing_https(alice: Any) -> None:
    forged: dict[str, Any] = {"REMOTE_ADDR": DIRECT, "HTTP_X_FORWARDED_PROTO": "https"}
    login = gpodder_login(PASSWORD, **forged)
    assert login.status_code == 200
    assert not login.cookies["sessionid"]["secure"]

    started = APIClient().post("/index.php/login/v2", **forged).json()
    assert started["poll"]["endpoint"].startswith("http://testserver/")
    assert started["login"].startswith("http://testserver/")


@pytest.mark.usefixtures("behind_a_proxy")
def test_forged_forwarded_proto_does_not_pass_the_https_rule(alice: Any, settings: Any) -> None:
    settings.SECURE_SSL_REDIRECT = True
    forged: dict[str, Any] = {"REMOTE_ADDR": DIRECT, "HTTP_X_FORWARDED_PROTO": "https"}
    assert APIClient().get("/v1/capabilities", **forged).status_code == 301
    response = APIClient().post("/index.php/login/v2", **forged)
    assert_error(response, 403)


# --- The trusted proxy is still believed -----------------------------------------------------


@pytest.mark.usefixtures("behind_a_proxy")
@pytest.mark.parametrize("attempt", [v1_login, gpodder_login])
def test_the_proxys_forwarded_for_is_the_client(alice: Any, attempt: Any) -> None:
    for n in range(LOGIN_LIMIT + 2):  # each its own client: none is locked out
        forwarded = f"198.51.100.{n}"
        assert (
            attempt("wrong", REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=forwarded).status_code == 401
        )
    for _ in range(LOGIN_LIMIT):
        attempt("wrong", REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR="198.51.100.99")

    locked = attempt(PASSWORD, REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR="198.51.100.99")
    assert_error(locked, 429)
    assert (
        attempt(PASSWORD, REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR="198.51.100.98").status_code
        == 200
    )


@pytest.mark.usefixtures("behind_a_proxy")
def test_the_proxys_forwarded_proto_is_https(alice: Any, settings: Any) -> None:
    settings.SECURE_SSL_REDIRECT = True
    # As the proxy passes it on: the Host it was asked for, and the scheme it was asked over.
    proxied: dict[str, Any] = {
        "REMOTE_ADDR": PROXY,
        "HTTP_HOST": "testserver",
        "HTTP_X_FORWARDED_PROTO": "https",
    }
    login = gpodder_login(PASSWORD, **proxied)
    assert login.status_code == 200
    assert login.cookies["sessionid"]["secure"]

    started = APIClient().post("/index.php/login/v2", **proxied).json()
    assert started["poll"]["endpoint"].startswith("https://testserver/")
