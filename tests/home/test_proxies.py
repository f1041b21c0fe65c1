"""The proxies believed when TRUSTED_PROXIES is not set (home.proxies, docs/operations.md,
"Behind a proxy"): loopback, and in the image the gateway of a container runtime's bridge, read
from the kernel's routing table as /proc/net/route shows it."""

from pathlib import Path

import pytest

from home import proxies
from tests.home.test_hosts import _settings_of

HEADER = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"


def _routes(tmp_path: Path, gateway: str, flags: str = "0003") -> Path:
    path = tmp_path / "route"
    path.write_text(
        HEADER
        + f"eth0\t00000000\t{gateway}\t{flags}\t0\t0\t0\t00000000\t0\t0\t0\n"
        + "eth0\t00005A0A\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n"
    )
    return path


@pytest.mark.parametrize(
    ("gateway", "found"),
    [
        ("0100580A", "10.88.0.1"),  # podman's default network
        ("0105590A", "10.89.5.1"),  # a network podman-compose made
        ("010011AC", "172.17.0.1"),  # Docker's bridge
        ("01001FAC", "172.31.0.1"),  # a network Docker compose made
        ("0101A8C0", None),  # 192.168.1.1: host networking, the LAN's router
        ("0202000A", None),  # 10.0.2.2: a rootless runtime's user-mode network
        ("010200C0", None),
    ],
)
def test_the_gateway_of_a_container_runtimes_bridge_is_found(
    tmp_path: Path, gateway: str, found: str | None
) -> None:
    assert proxies.container_gateway(_routes(tmp_path, gateway)) == found


def test_a_route_that_names_no_gateway_or_no_table_finds_none(tmp_path: Path) -> None:
    assert proxies.container_gateway(_routes(tmp_path, "0100580A", flags="0001")) is None
    assert proxies.container_gateway(tmp_path / "missing") is None
    (tmp_path / "junk").write_text(HEADER + "eth0\t00000000\tzz\t0003\n\x00\xff\n")
    assert proxies.container_gateway(tmp_path / "junk") is None


def test_outside_a_container_only_this_machine_is_believed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("IN_CONTAINER", raising=False)
    assert proxies.default_trusted_proxies() == ["127.0.0.1", "::1"]
    found = _settings_of({}, tmp_path)
    assert (found["proxies"], found["num"]) == (["127.0.0.1", "::1"], 0)


def test_in_the_image_x_forwarded_for_is_read_from_the_proxy_believed(tmp_path: Path) -> None:
    """This machine's own default route is no container bridge: loopback alone, but the one
    proxy's X-Forwarded-For read (NUM_PROXIES=1), which no other peer can set."""
    found = _settings_of({"IN_CONTAINER": "true"}, tmp_path)
    assert found["num"] == 1
    assert found["proxies"][:2] == ["127.0.0.1", "::1"]
    chosen = _settings_of({"IN_CONTAINER": "true", "TRUSTED_PROXIES": "10.0.0.5"}, tmp_path)
    assert chosen["proxies"] == ["10.0.0.5"]
