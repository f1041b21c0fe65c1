"""Hosts beyond ALLOWED_HOSTS (docs/self-hosting.md, "Names"): any private address and any
single-label name on the home server, and /health from this machine; nothing else. The home
routers' names with no configuration, EXTRA_ALLOWED_HOSTS, and the page a refused name gets."""

import ast
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from api.logs import OneLine
from home import environment

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def home(settings: Any) -> Any:
    settings.HOME_SERVER = True
    settings.ALLOWED_HOSTS = ["localhost", ".local"]
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


@pytest.mark.parametrize(
    "host", ["8.8.8.8", "evil.example.com", "192.168.1.50.evil.example", "[2606:4700::1111]:80"]
)
def test_a_public_name_or_address_is_refused_at_home(db: None, home: Any, host: str) -> None:
    assert Client().get("/login/", HTTP_HOST=host).status_code == 400


def test_the_full_layout_takes_only_its_own_names(db: None, settings: Any) -> None:
    settings.HOME_SERVER = False
    settings.ALLOWED_HOSTS = ["sync.example.com"]
    assert Client().get("/login/", HTTP_HOST="192.168.1.50").status_code == 400
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


ROUTER_NAMES = [
    "mynas:8000",  # a router's or the host's bare name, also what a container is reached by
    "diskstation",
    "nas.fritz.box:8000",
    "nas.home",
    "nas.lan",
    "nas.localdomain",
    "nas.internal",
    "podsync.home.arpa",
    "raspberrypi.local",
    "nas.tail1234.ts.net",
    "NAS.Fritz.Box.",  # any case, with the root's trailing dot
]


@pytest.mark.parametrize("host", ROUTER_NAMES)
def test_every_home_routers_names_are_accepted_with_no_configuration(
    db: None, settings: Any, host: str
) -> None:
    settings.HOME_SERVER = True
    settings.ALLOWED_HOSTS = environment.home_hosts()
    response = Client().get("/login/", HTTP_HOST=host)
    assert response.status_code == 200, response.content[:300]


@pytest.mark.parametrize("host", ["mynas", "diskstation:8000"])
def test_a_bare_name_stays_accepted_at_home_when_allowed_hosts_is_replaced(
    db: None, home: Any, host: str
) -> None:
    assert Client().get("/login/", HTTP_HOST=host).status_code == 200


@pytest.mark.parametrize("host", ["mynas", "nas.fritz.box", "nas.home"])
def test_the_full_layout_takes_no_home_name(db: None, settings: Any, host: str) -> None:
    settings.HOME_SERVER = False
    settings.ALLOWED_HOSTS = ["sync.example.com"]
    assert Client().get("/login/", HTTP_HOST=host).status_code == 400


@pytest.mark.parametrize("home_server", [True, False])
def test_a_refused_name_gets_a_page_naming_the_setting_that_adds_it(
    db: None, settings: Any, home_server: bool
) -> None:
    settings.HOME_SERVER = home_server
    settings.ALLOWED_HOSTS = environment.home_hosts() if home_server else ["sync.example.com"]
    response = Client().get("/", HTTP_HOST="podcasts.example.org:8000")
    assert response.status_code == 400
    page = response.content.decode()
    assert "<code>podcasts.example.org</code>" in page
    assert "EXTRA_ALLOWED_HOSTS=podcasts.example.org" in page
    # The LAN's addresses are offered only where they are accepted.
    assert ("192.168.1.50" in page) is home_server
    # The API keeps its error object.
    api = Client().get("/v1/capabilities", HTTP_HOST="podcasts.example.org")
    assert (api.status_code, api.json()["code"]) == (400, "400")


@pytest.mark.parametrize(
    "host",
    [
        "<script>alert(1)</script>",
        "evil.example\x00.lan",
        "ünïcode.example",
        "x" * 5000,
        "a" * 60 + ".example.com",
        "[::1",
        "",
    ],
)
def test_no_host_header_breaks_the_refusal_page(db: None, home: Any, host: str) -> None:
    response = Client().get("/", HTTP_HOST=host)
    assert response.status_code == 400
    page = response.content.decode()
    assert "<script>" not in page
    assert "Not a name this server answers to" in page


def test_the_log_advises_the_setting_that_adds_a_name() -> None:
    record = logging.LogRecord(
        "django.security.DisallowedHost", logging.ERROR, __file__, 1,
        "Invalid HTTP_HOST header: 'nas.example'. You may need to add 'nas.example' to "
        "ALLOWED_HOSTS.", None, None,
    )  # fmt: skip
    assert OneLine().filter(record)
    assert record.getMessage().endswith("add 'nas.example' to EXTRA_ALLOWED_HOSTS.")
    assert record.levelname == "WARNING"


def _allowed_hosts(env: dict[str, str], tmp_path: Path) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-c", "from django.conf import settings; print(settings.ALLOWED_HOSTS)"],
        cwd=ROOT,
        env={"PATH": os.environ["PATH"], "DJANGO_SETTINGS_MODULE": "config.settings.base",
             "DATA_DIR": str(tmp_path), **env},
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return list(ast.literal_eval(result.stdout.strip()))


def test_extra_allowed_hosts_adds_names_and_allowed_hosts_replaces_them(tmp_path: Path) -> None:
    extra = _allowed_hosts({"EXTRA_ALLOWED_HOSTS": "podcasts.example.org,.example.net"}, tmp_path)
    assert {"podcasts.example.org", ".example.net", ".local", ".fritz.box", "localhost"} <= set(
        extra
    )
    replaced = _allowed_hosts({"ALLOWED_HOSTS": "only.example.org"}, tmp_path)
    assert replaced == ["only.example.org"]
    full = _allowed_hosts(
        {"DATABASE_URL": "postgres://x@127.0.0.1:1/x", "SECRET_KEY": "k" * 50,
         "ALLOWED_HOSTS": "sync.example.com", "EXTRA_ALLOWED_HOSTS": "sync.example.org"},
        tmp_path,
    )  # fmt: skip
    assert full == ["sync.example.com", "sync.example.org"]
