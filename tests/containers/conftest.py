"""make image-test's fixtures: podman, the service's image and the stand-ins for the postgres
and redis images, each built once per run, and the figures the tests measure, printed at the
end of the run and written to test-output/image-test.json (or under TEST_OUTPUT_DIR)."""

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.containers.podman import ROOT, Podman

# The service's image as the tests build it; compose reads the name from PODSYNC_IMAGE.
# IMAGE_TEST_TAG names another, so that two checkouts testing at once build apart.
IMAGE = os.environ.get("IMAGE_TEST_TAG", "localhost/podsync:image-test")
# The same image for arm64 (a Raspberry Pi, an ARM NAS), built and run here through qemu, from
# the arm64 base that prepare.sh makes: --from stands it for the Containerfile's first FROM,
# where a registry would give the arm64 one of debian:bookworm-slim's platforms.
IMAGE_ARM64 = "localhost/podsync:image-test-arm64"
BASE_ARM64 = "localhost/debian:bookworm-slim-arm64"
# No registry here: Debian's PostgreSQL and Redis under the names compose.full.yaml uses by
# default, built from tests/containers/<folder>/Containerfile. Debian 12's PostgreSQL is 15: the
# service needs nothing of 17 that 15 lacks.
STAND_INS = {"localhost/postgres:17": "postgres", "localhost/redis:7": "redis"}

MEASURES: dict[str, Any] = {}


@pytest.fixture(scope="session")
def podman() -> Podman:
    return Podman()


@pytest.fixture(scope="session")
def measures() -> dict[str, Any]:
    return MEASURES


@pytest.fixture(scope="session")
def image(podman: Podman) -> str:
    start = time.monotonic()
    built = podman.build(IMAGE, ROOT, "-f", str(ROOT / "Containerfile"))
    MEASURES["image build (s)"] = round(time.monotonic() - start, 1)
    MEASURES["image build steps from cache"] = built.stdout.count("Using cache")
    size = int(podman("image", "inspect", "--format", "{{.Size}}", IMAGE).stdout)
    base = int(podman("image", "inspect", "--format", "{{.Size}}", "debian:bookworm-slim").stdout)
    MEASURES["image size (MB)"] = round(size / 1e6, 1)
    MEASURES["image size over debian:bookworm-slim (MB)"] = round((size - base) / 1e6, 1)
    return IMAGE


@pytest.fixture(scope="session")
def image_arm64(podman: Podman) -> str:
    if podman("image", "exists", BASE_ARM64, check=False).returncode != 0:
        pytest.fail(f"No image {BASE_ARM64}: make image-test makes it")
    start = time.monotonic()
    built = podman.build(
        IMAGE_ARM64, ROOT, "-f", str(ROOT / "Containerfile"),
        "--platform", "linux/arm64", "--from", BASE_ARM64,
    )  # fmt: skip
    MEASURES["arm64: image build under qemu (s)"] = round(time.monotonic() - start, 1)
    MEASURES["arm64: image build steps from cache"] = built.stdout.count("Using cache")
    size = int(podman("image", "inspect", "--format", "{{.Size}}", IMAGE_ARM64).stdout)
    MEASURES["arm64: image size (MB)"] = round(size / 1e6, 1)
    return IMAGE_ARM64


@pytest.fixture(autouse=True)
def leaves_nothing(podman: Podman) -> Iterator[None]:
    """Each test removes every container, volume and network it made, whatever happened."""

    def made() -> dict[str, set[str]]:
        return {
            kind: set(podman(*command, check=False).stdout.split())
            for kind, command in (
                ("containers", ("ps", "-aq")),
                ("volumes", ("volume", "ls", "-q")),
                ("networks", ("network", "ls", "-q")),
            )
        }

    before = made()
    yield
    after = made()
    left = {kind: after[kind] - before[kind] for kind in after if after[kind] - before[kind]}
    assert not left, f"left behind: {left}"


@pytest.fixture(scope="session")
def stand_ins(podman: Podman) -> None:
    for tag, folder in STAND_INS.items():
        podman.build(tag, ROOT / "tests" / "containers" / folder)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not MEASURES:
        return
    terminalreporter.section("image-test measures")
    for name, value in MEASURES.items():
        terminalreporter.write_line(f"{name}: {value}")
    output = Path(os.environ.get("TEST_OUTPUT_DIR", ROOT / "test-output"))
    output.mkdir(parents=True, exist_ok=True)
    (output / "image-test.json").write_text(json.dumps(MEASURES, indent=2) + "\n")
