"""The image answers every home network's names (docs/self-hosting.md, "Names"): the host's
bare name, which is not the container's own, each router's domain, and the host's addresses;
a public name gets the page naming EXTRA_ALLOWED_HOSTS, which adds it."""

import http.client

import pytest

from tests.containers.podman import Podman, free_port, wait_until_serving
from tests.containers.test_image import _name
from tests.names import HOME_NETWORK_NAMES

pytestmark = [pytest.mark.containers, pytest.mark.e2e]

# The home network's names, and addresses the container cannot know are the host's.
HOME_NAMES = [*HOME_NETWORK_NAMES, "192.168.178.20", "[fd00::20]"]


def _get(port: int, host: str) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", "/login/", headers={"Host": host})
    response = conn.getresponse()
    body = response.read().decode(errors="replace")
    conn.close()
    return response.status, body


def test_the_image_answers_the_names_of_a_home_network(podman: Podman, image: str) -> None:
    container, port = _name("hosts"), free_port()
    try:
        podman.run(
            "-d", "--name", container, "-p", f"127.0.0.1:{port}:8000",
            "-e", "EXTRA_ALLOWED_HOSTS=podsync.example.org", image,
        )  # fmt: skip
        wait_until_serving(port, 120, lambda: podman.logs(container))
        answers = {host: _get(port, f"{host}:8000")[0] for host in HOME_NAMES}
        assert answers == dict.fromkeys(HOME_NAMES, 200), answers
        assert _get(port, "podsync.example.org:8000")[0] == 200  # EXTRA_ALLOWED_HOSTS
        status, page = _get(port, "sync.example.net:8000")
        assert status == 400
        assert "EXTRA_ALLOWED_HOSTS=sync.example.net" in page
        assert "Bad Request (400)" not in page
        assert "add 'sync.example.net' to EXTRA_ALLOWED_HOSTS" in podman.logs(container)
    finally:
        podman("rm", "-f", "-v", "-t", "2", container, check=False)
