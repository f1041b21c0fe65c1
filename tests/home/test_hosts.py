"""Hosts beyond ALLOWED_HOSTS (docs/self-hosting.md, "Names"): any private address on the home
server, and /health from this machine; nothing else."""

from typing import Any

import pytest
from django.test import Client


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
