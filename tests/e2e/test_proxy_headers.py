"""Behind a proxy (NUM_PROXIES=1), under gunicorn with the production settings: X-Forwarded-For
and X-Forwarded-Proto are believed from the trusted proxy only (TRUSTED_PROXIES, loopback by
default; docs/operations.md, "Behind a proxy"). A client that reaches gunicorn directly, here
from 127.0.0.2, chooses neither the address the login lockout counts nor HTTPS."""

import http.client
from base64 import b64encode
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection

from tests.factories import UserFactory
from tests.servers import gunicorn_service, production_env

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("transactional_db")]

PASSWORD = "a long and unusual passphrase behind the proxy"
LIMIT = 10  # THROTTLE_LOGIN_RATE's default, 10/min
PROXY = "127.0.0.1"  # nginx on the same machine
DIRECT = "127.0.0.2"  # another peer: no proxy of ours


@pytest.fixture
def service(tmp_path: Path) -> Iterator[int]:
    env = production_env(
        "proxy-headers",
        connection.settings_dict,
        NUM_PROXIES="1",
        # One process: its own count of login attempts is the whole count (no Redis here).
        WEB_CONCURRENCY="1",
        LOG_LEVEL="WARNING",
    )
    for unset in ("REDIS_URL", "DEBUG", "TRUSTED_PROXIES", "THROTTLE_LOGIN_RATE"):
        env.pop(unset, None)
    with gunicorn_service(env, tmp_path / "gunicorn.log") as port:
        yield port


def basic(username: str, password: str) -> str:
    return "Basic " + b64encode(f"{username}:{password}".encode()).decode()


def log_in(
    port: int, username: str, password: str, source: str, **headers: str
) -> http.client.HTTPResponse:
    """The gpodder login (Basic), from the peer address `source`."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=(source, 0))
    conn.request(
        "POST",
        f"/api/2/auth/{username}/login.json",
        b"",
        {"Authorization": basic(username, password), **headers},
    )
    response = conn.getresponse()
    response.read()
    conn.close()
    return response


def session_cookie(response: http.client.HTTPResponse) -> list[str]:
    found = [c for c in response.headers.get_all("Set-Cookie") or [] if c.startswith("sessionid=")]
    assert found, response.headers
    return [part.strip().lower() for part in found[0].split(";")]


def test_a_direct_clients_forged_forwarded_for_does_not_escape_the_lockout(service: int) -> None:
    UserFactory(username="alice", with_deployed_password=PASSWORD)
    statuses = [
        log_in(service, "alice", "wrong", DIRECT, **{"X-Forwarded-For": f"198.51.100.{n}"}).status
        for n in range(LIMIT + 3)
    ]
    assert statuses == [401] * LIMIT + [429] * 3
    # Through the proxy, a client of its own address is not locked out.
    through = log_in(service, "alice", PASSWORD, PROXY, **{"X-Forwarded-For": "198.51.100.1"})
    assert through.status == 200


def test_the_proxys_forwarded_for_names_each_client(service: int) -> None:
    UserFactory(username="carol", with_deployed_password=PASSWORD)
    statuses = [
        log_in(service, "carol", "wrong", PROXY, **{"X-Forwarded-For": f"198.51.100.{n}"}).status
        for n in range(LIMIT + 3)
    ]
    assert statuses == [401] * (LIMIT + 3)
    # The proxy appends the peer it saw: a client's own forged entry before it counts for nothing.
    for _ in range(LIMIT):
        forged = {"X-Forwarded-For": "198.51.100.200, 203.0.113.5"}
        assert log_in(service, "carol", "wrong", PROXY, **forged).status == 401
    locked = {"X-Forwarded-For": "192.0.2.77, 203.0.113.5"}
    assert log_in(service, "carol", PASSWORD, PROXY, **locked).status == 429


def test_only_the_proxys_forwarded_proto_makes_the_cookie_secure(service: int) -> None:
    UserFactory(username="bob", with_deployed_password=PASSWORD)
    https = {"X-Forwarded-Proto": "https"}

    direct = log_in(service, "bob", PASSWORD, DIRECT, **https)
    assert direct.status == 200
    assert "secure" not in session_cookie(direct)

    proxied = log_in(service, "bob", PASSWORD, PROXY, **https, **{"X-Forwarded-For": "192.0.2.1"})
    assert proxied.status == 200
    assert "secure" in session_cookie(proxied)


@pytest.mark.parametrize(
    "header", [{"X-Forwarded-Ssl": "on"}, {"X-Forwarded-Protocol": "ssl"}]
)  # fmt: skip
def test_other_scheme_headers_make_nothing_secure_even_from_the_proxy(service: int, header):
    """Only X-Forwarded-Proto tells the scheme: a proxy that does not set the others passes
    them on from the client as they came, and gunicorn believed them."""
    UserFactory(username="carol", with_deployed_password=PASSWORD)
    proxied = log_in(service, "carol", PASSWORD, PROXY, **header)
    assert proxied.status == 200
    assert "secure" not in session_cookie(proxied)
