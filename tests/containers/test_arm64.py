"""The image for arm64, built from the same Containerfile and run here under emulation (qemu's
user-mode emulator, registered with the kernel by prepare.sh), synced with by gPodder's own
client: what docs/containers.md says of a Raspberry Pi or an ARM NAS, checked rather than
claimed. Every program of the container is an arm64 one, which the kernel hands to qemu.

Under emulation each step is several times slower than on the machine itself (the figures are
in test-output/image-test.json); a Raspberry Pi runs the same image natively.
"""

import re
import time
from typing import Any

import pytest

from tests.containers.podman import Podman, call, free_port, wait_until_serving
from tests.containers.test_image import FEEDS, _name, _sync

pytestmark = [pytest.mark.containers, pytest.mark.e2e]


def test_the_arm64_image_serves_and_syncs(
    podman: Podman, image_arm64: str, measures: dict[str, Any]
):
    platform = podman(
        "image", "inspect", "--format", "{{.Os}}/{{.Architecture}}", image_arm64
    ).stdout.strip()
    assert platform == "linux/arm64"
    container, volume, port = _name("arm64"), _name("arm64-data"), free_port()
    try:
        start = time.monotonic()
        podman.run(
            "-d", "--platform", "linux/arm64", "--name", container,
            "-p", f"127.0.0.1:{port}:8000", "-v", f"{volume}:/data", image_arm64,
        )  # fmt: skip
        wait_until_serving(port, 600, lambda: podman.logs(container))
        measures["arm64: podman run to serving under qemu (s)"] = round(time.monotonic() - start, 1)
        # The server is an arm64 program: the emulated processor is what Python sees.
        machine = podman("exec", container, "python", "-c", "import platform, sys; "
                         "print(platform.machine(), sys.implementation.name)").stdout  # fmt: skip
        assert machine.split() == ["aarch64", "cpython"], machine
        assert podman("exec", container, "uname", "-m").stdout.strip() == "aarch64"

        found = re.search(r"Sign in as 'admin' with the password: (\S+)", podman.logs(container))
        assert found, podman.logs(container)
        start = time.monotonic()
        _sync(port, found[1])
        measures["arm64: mygpoclient sync under qemu (s)"] = round(time.monotonic() - start, 1)
        status, tokens = call(
            port, "POST", "/v1/auth/login", {"username": "admin", "password": found[1]}
        )
        assert status == 200, tokens
        status, page = call(port, "GET", "/v1/subscriptions", token=tokens["access_token"])
        assert (status, sorted(s["feed_url"] for s in page["subscriptions"])) == (200, FEEDS)
    finally:
        podman("rm", "-f", "-v", "-t", "2", container, check=False)
        podman("volume", "rm", "-f", volume, check=False)
