"""docs/self-hosting.md's container blocks (`<!-- doc-test: image -->`), run as written by make
image-test, in a clone of the repository, with `docker` on the PATH standing for podman.

They make three stories, each run in the guide's order and then removed: the image by `docker
run` (started, upgraded, backed up, restored), compose.yaml, and compose.full.yaml (started,
dumped, restored). Between the blocks the tests check what a person would see: the server
answering, the admin's password in the log working, a subscription added after a backup gone
once that backup is restored.

The blocks use the guide's names (the container and volume `podsync`, port 8000): the tests stop
before running any of them if something of that name is already on this machine. The `docker`
of tests/containers/docker.sh publishes a `docker run`'s port on 127.0.0.1 only (the compose
file's through PODSYNC_PORT, its own setting), so that nothing but this machine reaches it.
"""

import os
import re
import socket
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mygpoclient import api

from tests.containers.podman import HOST_CA, ROOT, Podman, call, wait_until_serving
from tests.docs.blocks import Block, blocks
from tests.docs.session import clone

pytestmark = [pytest.mark.containers, pytest.mark.e2e]

GUIDE = ROOT / "docs" / "self-hosting.md"
PORT = 8000
FEED = "http://192.0.2.9/podcast.xml"  # a documentation address: the feed checks never fetch it


def _stories() -> dict[str, list[Block]]:
    found = blocks(GUIDE, "image")
    full = [block for block in found if "compose.full.yaml" in block.text]
    home = [block for block in found if "docker compose" in block.text and block not in full]
    run = [block for block in found if block not in full and block not in home]
    return {"docker run": run, "compose.yaml": home, "compose.full.yaml": full}


def test_every_container_block_is_in_a_story():
    stories = _stories()
    assert all(stories.values()), stories
    assert sum(map(len, stories.values())) == len(blocks(GUIDE, "image"))


class Guide:
    """The clone the blocks run in, and a shell for them."""

    def __init__(self, podman: Podman, folder: Path, bin_dir: Path, home: Path):
        self.podman, self.folder = podman, folder
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("PODSYNC_", "COMPOSE_"))},
            "PATH": f"{bin_dir}:{os.environ['PATH']}",
            "HOME": str(home),
            # compose.yaml's port on this machine only, as `docker run`'s (the shim's).
            "PODSYNC_PORT": f"127.0.0.1:{PORT}",
        }
        self.project = re.sub(r"[^-_a-z0-9]", "", folder.name.lower())

    def run(self, block: Block) -> str:
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block.text],
            cwd=self.folder, env=self.env, capture_output=True, text=True, timeout=1800,
        )  # fmt: skip
        output = done.stdout + done.stderr
        assert done.returncode == 0, f"{block.where} failed:\n{block.text}\n{output[-5000:]}"
        return output

    def remove(self) -> None:
        """What the blocks made: the container and volume `podsync`, and both compose projects."""
        self.podman("rm", "-f", "-v", "-t", "2", "podsync", check=False)
        self.podman("volume", "rm", "-f", "podsync", check=False)
        self.podman.remove_project(self.project)


@pytest.fixture(scope="module")
def guide(
    podman: Podman, image: str, stand_ins: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Guide]:
    for kind, name in (("container", "podsync"), ("volume", "podsync")):
        if podman(kind, "exists", name, check=False).returncode == 0:
            pytest.fail(f"A {kind} named {name} is here: the guide's blocks would use it")
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", PORT))
        except OSError:
            pytest.fail(f"Port {PORT} is in use: the guide's blocks publish on it")
    work = tmp_path_factory.mktemp("guide")
    (work / "home").mkdir()
    folder = clone(work, work / "home")
    if podman("ps", "-aq", "--filter", f"label=io.podman.compose.project={folder.name}").stdout:
        pytest.fail(f"A compose project named {folder.name} is here: the guide's would be it")
    bin_dir = work / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "docker"
    shim.write_text(_shim(podman))
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    found = Guide(podman, folder, bin_dir, work / "home")
    try:
        yield found
    finally:
        found.remove()


def _shim(podman: Podman) -> str:
    """tests/containers/docker.sh with this machine's podman flags filled in."""
    build = ["--format", "docker"]
    if HOST_CA.exists():
        build += [
            "-v",
            f"{HOST_CA}:/run/host-ca.crt:ro",
            "--build-arg",
            "PIP_CERT=/run/host-ca.crt",
        ]
    text = (Path(__file__).parent / "docker.sh").read_text()
    for name, values in (
        ("GLOBAL", podman.global_args),
        ("RUN", podman.run_args),
        ("BUILD", build),
    ):
        text = text.replace(f"{name}=()", f"{name}=({' '.join(values)})", 1)
    return text


def _password(log: str) -> str:
    found = re.search(r"with (?:the )?password: (\S+)", log)
    assert found, log
    return found[1]


def _client(password: str) -> api.MygPodderClient:
    return api.MygPodderClient("admin", password, root_url=f"http://127.0.0.1:{PORT}")


def _serving(guide: Guide, container: str) -> None:
    wait_until_serving(PORT, 180, lambda: guide.podman.logs(container))


def test_the_docker_run_story(guide: Guide):
    """Run, upgrade, back up, restore: the same admin throughout, and a subscription made after
    the backup gone once it is restored."""
    started, upgraded, backed_up, restored = _stories()["docker run"]
    try:
        password = _password(guide.run(started) + _wait_for_log(guide, "podsync"))
        _serving(guide, "podsync")
        assert _client(password).put_subscriptions("phone", [FEED]) is True

        guide.run(upgraded)
        _serving(guide, "podsync")
        assert _client(password).get_subscriptions("phone") == [FEED]

        guide.run(backed_up)
        assert (guide.folder / "podsync-backup.sqlite3").stat().st_size > 0
        assert (guide.folder / "podsync-secret_key").read_text().strip()
        assert _client(password).put_subscriptions("phone", []) is True

        guide.run(restored)
        _serving(guide, "podsync")
        assert _client(password).get_subscriptions("phone") == [FEED]
    finally:
        guide.remove()


def test_the_compose_yaml_story(guide: Guide):
    [started] = _stories()["compose.yaml"]
    container = f"{guide.project}_server_1"
    try:
        guide.run(started)
        _serving(guide, container)
        password = _password(guide.podman.logs(container))
        assert _client(password).put_subscriptions("phone", [FEED]) is True
    finally:
        guide.remove()


def test_the_compose_full_yaml_story(guide: Guide):
    """Started, dumped, restored; the first start's admin in the migrate service's log. The
    guide's .env keeps the default redirect to HTTPS, so the checks read the database."""
    started, dumped, restored = _stories()["compose.full.yaml"]
    web, postgres = f"{guide.project}_web_1", f"{guide.project}_postgres_1"

    def accounts() -> list[str]:
        done = guide.podman(
            "exec", postgres, "psql", "-U", "podsync", "-At", "-c",
            "SELECT username FROM auth_user ORDER BY username",
        )  # fmt: skip
        return done.stdout.split()

    try:
        output = guide.run(started)
        _serving(guide, web)
        assert guide.podman("wait", f"{guide.project}_migrate_1", timeout=120).stdout.strip() == "0"
        assert "Created staff account 'admin'" in output + guide.podman.logs(
            f"{guide.project}_migrate_1"
        )
        assert call(PORT, "GET", "/v1/subscriptions")[0] == 301  # to https://sync.example.com

        guide.run(dumped)
        assert (guide.folder / "podsync.dump").read_bytes()[:5] == b"PGDMP"
        guide.podman(
            "exec", postgres, "psql", "-U", "podsync", "-c", "UPDATE auth_user SET username = 'x'"
        )  # fmt: skip
        assert accounts() == ["x"]

        guide.run(restored)
        _serving(guide, web)
        assert accounts() == ["admin"]
    finally:
        guide.remove()


def _wait_for_log(guide: Guide, container: str) -> str:
    """The container's log once its start has printed the password (a person reading `docker
    logs` a moment after `docker run` would run it again)."""
    deadline = time.monotonic() + 120
    while "password" not in (log := guide.podman.logs(container)):
        assert time.monotonic() < deadline, log
        time.sleep(0.5)
    return log
