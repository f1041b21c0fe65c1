"""Hosts beyond ALLOWED_HOSTS (docs/self-hosting.md, "Names"): on the home server any private
address, any single-label name and every home network's domain; /health from this machine;
EXTRA_ALLOWED_HOSTS adding to either layout's names; and the page a refused name gets."""

import json
import logging
import os
import subprocess
import sys
from typing import Any

import pytest
from django.test import Client

from home import environment
from tests.names import HOME_NETWORK_NAMES
from tests.servers import ROOT


@pytest.fixture
def home(settings: Any) -> Any:
    settings.HOME_SERVER = True
    settings.ALLOWED_HOSTS = environment.home_hosts()
    return settings


@pytest.mark.parametrize(
    "host",
    [
        "192.168.1.50:8000",
        "10.0.0.7",
        "172.20.3.4:8000",
        "[fd00::5]:8000",
        "[fe80::1]:8000",
        "100.101.1.2:8000",  # Tailscale
        "raspberrypi.local:8000",
        "127.0.0.1:8000",
    ],
)
def test_the_home_server_answers_its_lan_by_address(db: None, home: Any, host: str) -> None:
    response = Client().get("/login/", HTTP_HOST=host)
    assert response.status_code == 200
    # The address the page was reached at is the one its forms and links keep.
    assert response.wsgi_request.get_host() == host


# The home network's names, alone, with a port, and fully qualified.
ROUTER_NAMES = [*HOME_NETWORK_NAMES, "diskstation:5000", "mynas.", "nas.fritz.box:8000"]


@pytest.mark.parametrize("host", ROUTER_NAMES)
def test_the_home_server_answers_every_home_networks_names(db: None, home: Any, host: str) -> None:
    response = Client().get("/login/", HTTP_HOST=host)
    assert response.status_code == 200, response.content[:300]
    assert response.wsgi_request.get_host() == host


@pytest.mark.parametrize("host", ["mynas", "nas.fritz.box", "pi.tail1234.ts.net"])
def test_the_home_names_hold_when_allowed_hosts_replaces_the_rest(
    db: None, settings: Any, host: str
) -> None:
    """A bare name is answered like an address: set ALLOWED_HOSTS to a list of its own and
    the domains go, the bare names and addresses stay."""
    settings.HOME_SERVER = True
    settings.ALLOWED_HOSTS = ["sync.example.com"]
    status = Client().get("/login/", HTTP_HOST=host).status_code
    assert status == (200 if "." not in host else 400)


@pytest.mark.parametrize(
    "host",
    [
        "8.8.8.8",
        "evil.example.com",
        "192.168.1.50.evil.example",
        "[2606:4700::1111]:80",
        "nas.lan.evil.example",
        "fritz.box.evil.example",
        "ts.net.evil.example",
        "evil.example.",
    ],
)
def test_a_public_name_or_address_is_refused_at_home(db: None, home: Any, host: str) -> None:
    assert Client().get("/login/", HTTP_HOST=host).status_code == 400


def test_the_full_layout_takes_only_its_own_names(db: None, settings: Any) -> None:
    settings.HOME_SERVER = False
    settings.ALLOWED_HOSTS = ["sync.example.com"]
    for host in ("192.168.1.50", "mynas", "nas.fritz.box"):
        assert Client().get("/login/", HTTP_HOST=host).status_code == 400
    assert Client().get("/login/", HTTP_HOST="sync.example.com").status_code == 200


@pytest.mark.parametrize("home_server", [True, False])
def test_health_answers_this_machine_whatever_name_it_uses(
    db: None, settings: Any, home_server: bool
) -> None:
    settings.HOME_SERVER = home_server
    settings.ALLOWED_HOSTS = ["sync.example.com"]
    for peer in ("127.0.0.1", "::1"):
        response = Client(REMOTE_ADDR=peer).get("/health", HTTP_HOST="localhost:8000")
        assert response.status_code == 200, response.content
    # From elsewhere, or any other path from here: ALLOWED_HOSTS decides.
    elsewhere = Client(REMOTE_ADDR="203.0.113.9")
    assert elsewhere.get("/health", HTTP_HOST="x.example").status_code == 400
    here = Client(REMOTE_ADDR="127.0.0.1")
    assert here.get("/login/", HTTP_HOST="x.example").status_code == 400
    bad = Client(REMOTE_ADDR="127.0.0.1").get("/health", HTTP_HOST="bad host/")
    assert bad.status_code == 400


@pytest.mark.parametrize("home_server", [True, False])
def test_a_refused_name_gets_a_page_naming_the_setting_that_adds_it(
    db: None, settings: Any, home_server: bool, caplog: pytest.LogCaptureFixture
) -> None:
    settings.HOME_SERVER = home_server
    settings.ALLOWED_HOSTS = ["sync.example.com"]
    with caplog.at_level(logging.INFO):
        response = Client().get("/", HTTP_HOST="podsync.example.org:8000")
    assert response.status_code == 400
    assert response["Content-Type"] == "text/html; charset=utf-8"
    page = response.content.decode()
    assert "does not answer to the name podsync.example.org" in page
    assert "EXTRA_ALLOWED_HOSTS=podsync.example.org make run" in page
    assert "Bad Request (400)" not in page
    assert "sync.example.com" not in page  # the names it answers are nobody else's business
    assert response["Cache-Control"] == "private, no-store"
    assert "default-src 'none'" in response["Content-Security-Policy"]
    (line,) = [r.getMessage() for r in caplog.records if r.name == "django.security.DisallowedHost"]
    assert "EXTRA_ALLOWED_HOSTS" in line
    assert "'podsync.example.org'" in line
    assert "ALLOWED_HOSTS." not in line  # Django's own advice, which replaced the names


def test_a_refused_name_on_an_api_path_answers_the_error_object(db: None, settings: Any) -> None:
    settings.ALLOWED_HOSTS = ["sync.example.com"]
    response = Client().get("/api/2/devices/alice.json", HTTP_HOST="evil.example.com")
    assert response.status_code == 400
    assert response.json()["message"] == "Bad request: host not allowed"


def test_a_refused_name_is_refused_before_the_https_redirect(db: None, settings: Any) -> None:
    """The full layout redirects plain HTTP to HTTPS: a name it does not answer still gets the
    page, not Django's bare 400 from the redirect asking for the host."""
    settings.HOME_SERVER = False
    settings.SECURE_SSL_REDIRECT = True
    settings.ALLOWED_HOSTS = ["sync.example.com"]
    response = Client().get("/login/", HTTP_HOST="sync.example.org")
    assert response.status_code == 400
    assert b"EXTRA_ALLOWED_HOSTS" in response.content


@pytest.mark.parametrize(
    "host",
    [
        "<script>alert(1)</script>.example",
        "evil.example\x00.lan",
        "caf\u00e9.example",
        "\u043f\u0440\u0438\u043c\u0435\u0440.\u0440\u0444",
        "a" * 100_000,
        "x" * 300 + ".example",
        "[::1",
        "nas.lan:99999999999999999999",
        "",
        ":8000",
        "\r\nSet-Cookie: x=1",
    ],
)
@pytest.mark.parametrize("home_server", [True, False])
def test_any_host_header_gets_a_safe_answer(
    db: None, settings: Any, home_server: bool, host: str
) -> None:
    settings.HOME_SERVER = home_server
    settings.ALLOWED_HOSTS = ["sync.example.com"]
    response = Client().get("/", HTTP_HOST=host)
    assert response.status_code == 400
    page = response.content.decode()
    assert "<script>" not in page
    assert "\x00" not in page
    assert "\r" not in page
    assert len(page) < 5000  # never the huge Host sent back
    assert "x=1" not in str(response.cookies)


def _settings_of(env: dict[str, str], tmp_path: Any) -> dict[str, Any]:
    """The settings the service reads with this environment (production settings, not the
    tests')."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json; from django.conf import settings as s; "
            "print(json.dumps({'hosts': s.ALLOWED_HOSTS, 'proxies': s.TRUSTED_PROXIES,"
            " 'num': s.REST_FRAMEWORK['NUM_PROXIES']}))",
        ],
        cwd=ROOT,
        env={
            "PATH": os.environ["PATH"],
            "DJANGO_SETTINGS_MODULE": "config.settings.base",
            "SECRET_KEY": "hosts-test-secret-key-long-enough-0123456789abcdef",
            "DATA_DIR": str(tmp_path),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return dict(json.loads(done.stdout))


def test_extra_allowed_hosts_adds_to_the_defaults_in_either_layout(tmp_path: Any) -> None:
    home = _settings_of({"EXTRA_ALLOWED_HOSTS": "Podsync.Example.org, nas.corp"}, tmp_path)
    assert {"podsync.example.org", "nas.corp", "localhost", ".fritz.box", ".ts.net"} <= set(
        home["hosts"]
    )
    full = _settings_of(
        {
            "DATABASE_URL": "postgres://x@127.0.0.1:1/x",
            "ALLOWED_HOSTS": "sync.example.com",
            "EXTRA_ALLOWED_HOSTS": "podsync.example.org",
        },
        tmp_path,
    )
    assert full["hosts"] == ["sync.example.com", "podsync.example.org"]
    # ALLOWED_HOSTS still replaces the defaults.
    assert ".lan" not in _settings_of({"ALLOWED_HOSTS": "a.example"}, tmp_path)["hosts"]
