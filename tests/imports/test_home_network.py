"""Importing from a server at home (docs/imports.md, "A server at home"): on the home server, a
private address is reached once the person says it is their own server on their own network;
loopback, link-local and the metadata addresses never are; the full layout keeps to
IMPORT_ALLOWED_NETWORKS. The stand-in old server listens on a private address this test adds to
the loopback interface (a real one, reached through the kernel like a box on the LAN)."""

import ipaddress
import os
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client

from feedchecks import fetcher
from imports.models import Import
from imports.remote import HOME_NETWORKS, Account, ImportFailed, server_source
from imports.services import history_import
from subscriptions.models import Subscription
from tests.imports.standins import PASSWORD, USER, standin


@pytest.fixture(scope="module")
def lan_address() -> Iterator[str]:
    """A private address of this machine's, one per test process (xdist runs two at once)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw9").removeprefix("gw")
    address = f"10.254.54.{10 + int(worker)}"
    subprocess.run(["ip", "addr", "add", f"{address}/32", "dev", "lo"], check=False)
    try:
        yield address
    finally:
        subprocess.run(["ip", "addr", "del", f"{address}/32", "dev", "lo"], check=False)


@pytest.fixture
def home(settings: Any) -> Any:
    settings.HOME_SERVER = True
    settings.IMPORT_ALLOWED_NETWORKS = []
    return settings


def import_from(user: Any, url: str, *, own: bool) -> Any:
    account = Account(server=url, username=USER, password=PASSWORD, own_network=own)
    with server_source(account) as source:
        return history_import(user=user, source=source)


def test_a_confirmed_server_at_home_comes_in(alice: Any, home: Any, lan_address: str) -> None:
    with standin("mygpo", host=lan_address) as server:
        summary = import_from(alice, server.url, own=True)
    assert summary.podcasts_added == 2
    assert Subscription.objects.filter(user=alice).count() == 2


def test_an_unconfirmed_one_is_refused_saying_what_to_tick(
    alice: Any, home: Any, lan_address: str
) -> None:
    with (
        standin("mygpo", host=lan_address) as server,
        pytest.raises(ImportFailed, match=r"private network: if it is your own server.*tick"),
    ):
        import_from(alice, server.url, own=False)
    assert not Subscription.objects.filter(user=alice).exists()


def test_the_full_layout_keeps_to_its_networks_confirmed_or_not(
    alice: Any, settings: Any, lan_address: str
) -> None:
    settings.HOME_SERVER = False
    settings.IMPORT_ALLOWED_NETWORKS = []
    with (
        standin("mygpo", host=lan_address) as server,
        pytest.raises(ImportFailed, match=r"its operator can allow.*IMPORT_ALLOWED_NETWORKS"),
    ):
        import_from(alice, server.url, own=True)
    settings.IMPORT_ALLOWED_NETWORKS = [f"{lan_address}/32"]
    with standin("mygpo", host=lan_address) as server:
        assert import_from(alice, server.url, own=False).podcasts_added == 2


def test_loopback_is_never_reached_confirmed_or_not(alice: Any, home: Any) -> None:
    with (
        standin("mygpo") as server,
        pytest.raises(ImportFailed, match=r"this machine itself.*address on your network"),
    ):
        import_from(alice, server.url, own=True)


@pytest.mark.parametrize(
    "address",
    ["169.254.169.254", "169.254.1.1", "fe80::1", "fd00:ec2::254", "100.100.100.200", "127.0.0.2",
     "::1", "0.0.0.0"],
)  # fmt: skip
def test_link_local_loopback_and_metadata_addresses_stay_refused(address: str) -> None:
    ip = ipaddress.ip_address(address)
    assert not fetcher.address_allowed(ip, HOME_NETWORKS)


@pytest.mark.parametrize("address", ["192.168.1.50", "10.0.0.7", "172.20.3.4", "100.101.1.2",
                                     "fd12:3456::1"])  # fmt: skip
def test_the_home_networks_are_reached_once_confirmed(address: str) -> None:
    assert fetcher.address_allowed(ipaddress.ip_address(address), HOME_NETWORKS)


def test_the_page_offers_the_confirmation_at_home_only(alice: Any, settings: Any) -> None:
    client = Client()
    client.force_login(alice)
    settings.HOME_SERVER = True
    assert "It is my own server, on my own network" in client.get("/data/").content.decode()
    settings.HOME_SERVER = False
    assert "It is my own server" not in client.get("/data/").content.decode()


def test_a_refused_import_shows_its_reason_and_no_row_of_zeros(
    alice: Any, home: Any, lan_address: str, django_capture_on_commit_callbacks: Any
) -> None:
    client = Client()
    client.force_login(alice)
    with standin("mygpo", host=lan_address) as server:
        form = {"server": server.url, "username": USER, "password": PASSWORD, "protocol": "auto"}
        with django_capture_on_commit_callbacks(execute=True):
            answer = client.post("/data/import-server/", form)
        assert answer.status_code == 302, answer.content[:500]
        upload = Import.objects.get(user=alice)
        assert upload.state == Import.State.FAILED
        page = client.get(answer["Location"]).content.decode()
        assert "if it is your own server on your own network" in page
        assert "Podcasts added" not in page
        form["own_network"] = "on"
        with django_capture_on_commit_callbacks(execute=True):
            answer = client.post("/data/import-server/", form)
        page = client.get(answer["Location"]).content.decode()
    assert Import.objects.filter(user=alice).latest("pk").state == Import.State.DONE, page
    assert "Podcasts added" in page
