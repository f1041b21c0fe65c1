"""The container image and both compose layouts, built and run for real with podman (make
image-test, docs/containers.md): the home server a `docker run` starts, the home compose file,
and the full layout (PostgreSQL, Redis, migrate, gunicorn, the two worker pools, beat) through
a sync, a deletion a worker finishes, and a restart that keeps the data.

Traffic stays on this machine: the tests reach the containers on ports published on 127.0.0.1,
and the containers each other on podman's bridge. The feeds subscribed to are on a
documentation network (192.0.2.0/24, RFC 5737), which the feed checks refuse to fetch, so
nothing is asked of any other host either.
"""

import json
import os
import re
import secrets
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from mygpoclient import api

from tests.containers.podman import ROOT, Podman, call, free_port, wait_until_serving

pytestmark = [pytest.mark.containers, pytest.mark.e2e]

FEEDS = [f"http://192.0.2.{n}/podcast.xml" for n in range(1, 6)]


def _name(what: str) -> str:
    return f"podsync-test-{what}-{secrets.token_hex(3)}"


def _healthcheck(podman: Podman, image: str) -> list[str]:
    """The command of the image's HEALTHCHECK, as `podman exec` takes it."""
    found = podman("image", "inspect", "--format", "{{json .Config.Healthcheck}}", image).stdout
    test = json.loads(found)["Test"]
    if test[0] == "CMD-SHELL":
        return ["sh", "-c", test[1]]
    assert test[0] == "CMD", test
    return test[1:]


def _rss_mb(podman: Podman, container: str) -> float:
    """The resident memory of every process in the container, added up (MB)."""
    script = (
        "import os\n"
        "total = 0\n"
        "for pid in filter(str.isdigit, os.listdir('/proc')):\n"
        "    try:\n"
        "        status = open(f'/proc/{pid}/status').read()\n"
        "    except OSError:\n"
        "        continue\n"
        "    for line in status.splitlines():\n"
        "        if line.startswith('VmRSS:'):\n"
        "            total += int(line.split()[1])\n"
        "print(total)\n"
    )
    return round(int(podman("exec", container, "python", "-c", script).stdout) / 1024, 1)


def _sync(port: int, password: str) -> None:
    """What gPodder does (mygpoclient, unmodified): a device's list put, another device's
    changes uploaded, both read back."""
    client = api.MygPodderClient("admin", password, root_url=f"http://127.0.0.1:{port}")
    assert client.put_subscriptions("phone", FEEDS[:3]) is True
    assert sorted(client.get_subscriptions("phone")) == FEEDS[:3]
    result = client.update_subscriptions("laptop", add_urls=FEEDS[3:])
    assert result.update_urls == []
    changes = client.pull_subscriptions("phone", since=0)
    assert sorted(changes.add) == FEEDS
    assert changes.remove == []


def test_the_image_runs_the_home_server(podman: Podman, image: str, measures: dict[str, Any]):
    """`docker run -p 8000:8000 -v podsync:/data IMAGE`: a server, its admin's password in the
    log, that gPodder syncs with, as a user who is not root, healthy by its own check."""
    container, volume, port = _name("home"), _name("data"), free_port()
    try:
        start = time.monotonic()
        podman.run(
            "-d", "--name", container, "-p", f"127.0.0.1:{port}:8000", "-v", f"{volume}:/data",
            image,
        )  # fmt: skip
        wait_until_serving(port, 120, lambda: podman.logs(container))
        measures["home: podman run to serving (s)"] = round(time.monotonic() - start, 1)
        log = podman.logs(container)
        found = re.search(r"Sign in as 'admin' with the password: (\S+)", log)
        assert found, log
        password = found[1]

        _sync(port, password)
        status, tokens = call(
            port, "POST", "/v1/auth/login", {"username": "admin", "password": password}
        )
        assert status == 200, tokens
        status, page = call(port, "GET", "/v1/subscriptions", token=tokens["access_token"])
        assert (status, sorted(s["feed_url"] for s in page["subscriptions"])) == (200, FEEDS)

        # The image's HEALTHCHECK passes (run as podman would, without systemd's timer).
        check = podman("exec", container, *_healthcheck(podman, image), check=False)
        assert check.returncode == 0, check.stdout + check.stderr
        # Every process of the server runs as the image's user, which owns /data alone.
        users = podman("top", container, "user", "args").stdout.splitlines()[1:]
        assert users, "no process"
        assert all(line.split()[0] == "podsync" for line in users), users
        owners = podman("exec", container, "stat", "-c", "%U %a %n", "/data", "/app").stdout
        assert owners.split("\n")[:2] == ["podsync 700 /data", "root 755 /app"], owners
        # The CA certificates the feed checks verify HTTPS with are there.
        podman(
            "exec", container, "python", "-c",
            "import ssl; assert ssl.create_default_context().load_verify_locations("
            "'/etc/ssl/certs/ca-certificates.crt') is None",
        )  # fmt: skip
        measures["home: memory after the sync, all processes' RSS (MB)"] = _rss_mb(
            podman, container
        )
        stats = podman("stats", "--no-stream", "--format", "{{.MemUsage}}", container, check=False)
        if stats.returncode == 0:
            measures["home: memory after the sync, podman stats"] = stats.stdout.strip()

        # Started again: the same data and key, no new password, and a quick start.
        podman("stop", "-t", "10", container)
        start = time.monotonic()
        podman("start", container)
        wait_until_serving(port, 60, lambda: podman.logs(container))
        measures["home: podman start (again) to serving (s)"] = round(time.monotonic() - start, 1)
        client = api.MygPodderClient("admin", password, root_url=f"http://127.0.0.1:{port}")
        assert sorted(client.get_subscriptions("phone")) == FEEDS
        assert podman.logs(container).count("with the password:") == 1
    finally:
        podman("rm", "-f", "-v", "-t", "2", container, check=False)
        podman("volume", "rm", "-f", volume, check=False)


def _project(tmp_path: Path, compose_file: str, env_file: str | None = None) -> Path:
    """A compose project folder of its own: the compose file, and its .env, if any, beside it
    (podman-compose reads `.env` from the compose file's folder, where a person's own might be)."""
    folder = tmp_path / "project"
    folder.mkdir()
    shutil.copy(ROOT / compose_file, folder / compose_file)
    if env_file is not None:
        (folder / ".env").write_text(env_file)
    return folder / compose_file


def test_the_home_compose_file_serves(
    podman: Podman, image: str, tmp_path: Path, measures: dict[str, Any]
):
    project, port = _name("compose-home"), free_port()
    compose = _project(tmp_path, "compose.yaml")
    env = {**_environ(), "PODSYNC_IMAGE": image, "PODSYNC_PORT": f"127.0.0.1:{port}"}
    try:
        podman.compose(project, compose, "up", "-d", env=env)
        wait_until_serving(port, 120, lambda: podman.logs(f"{project}_server_1"))
        assert "Sign in as 'admin' with the password:" in podman.logs(f"{project}_server_1")
        inspect = podman(
            "inspect", "--format", "{{.HostConfig.RestartPolicy.Name}}", f"{project}_server_1"
        )
        assert inspect.stdout.strip() == "unless-stopped"
        podman.compose(project, compose, "down", "-t", "2", "-v", env=env)
    finally:
        podman.remove_project(project)


def _environ() -> dict[str, str]:
    """This process's environment, but for what a compose file reads: the test sets that."""
    return {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PODSYNC_", "POSTGRES_", "COMPOSE_"))
    }


def _env_file(port: int, image: str) -> str:
    """deploy/env.example, filled in as its comments ask, for a server reached directly over
    plain HTTP on a port of this machine."""
    text = (ROOT / "deploy" / "env.example").read_text()
    values = {
        "SECRET_KEY": secrets.token_urlsafe(50),
        "POSTGRES_PASSWORD": secrets.token_hex(24),
        "PUBLIC_URL": f"http://127.0.0.1:{port}",
        "PODSYNC_PORT": f"127.0.0.1:{port}",
        "SECURE_SSL_REDIRECT": "false",
        "PODSYNC_IMAGE": image,
    }
    for key, value in values.items():
        text, found = re.subn(rf"^#? ?{key}=.*$", f"{key}={value}", text, flags=re.MULTILINE)
        assert found == 1, f"deploy/env.example has no line for {key}"
    return text


def test_the_full_layout_syncs_deletes_through_a_worker_and_keeps_its_data(
    podman: Podman, image: str, stand_ins: None, tmp_path: Path, measures: dict[str, Any]
):
    project, port = _name("full"), free_port()
    compose = _project(tmp_path, "compose.full.yaml", _env_file(port, image))
    env = _environ()

    def logs() -> str:
        return "\n".join(
            f"--- {service}\n{podman.logs(f'{project}_{service}_1')[-3000:]}"
            for service in ("postgres", "redis", "migrate", "web", "worker-deletions", "beat")
        )

    try:
        start = time.monotonic()
        podman.compose(project, compose, "up", "-d", env=env)
        wait_until_serving(port, 300, logs)
        measures["full: podman-compose up to serving (s)"] = round(time.monotonic() - start, 1)
        # The web service waits for the schema; the migrate service then makes the account.
        exited = podman("wait", f"{project}_migrate_1", timeout=120).stdout.strip()
        migrate_log = podman.logs(f"{project}_migrate_1")
        assert exited == "0", migrate_log
        found = re.search(r"Created staff account 'admin' with password: (\S+)", migrate_log)
        assert found, migrate_log
        password = found[1]

        _sync(port, password)
        status, tokens = call(
            port, "POST", "/v1/auth/login", {"username": "admin", "password": password}
        )
        assert status == 200, tokens
        token = tokens["access_token"]
        status, page = call(port, "GET", "/v1/subscriptions", token=token)
        assert status == 200, page
        guids = {s["feed_url"]: s["guid"] for s in page["subscriptions"]}
        assert sorted(guids) == FEEDS

        # A deletion: accepted, then finished by the deletions worker, in its own container.
        status, deletion = call(port, "DELETE", f"/v1/subscriptions/{guids[FEEDS[0]]}", token=token)
        assert status == 202, deletion
        deadline = time.monotonic() + 60
        while True:
            status, state = call(
                port, "GET", f"/v1/deletions/{deletion['deletion_id']}", token=token
            )
            assert status == 200, state
            if state["status"] == "SUCCESS":
                break
            assert state["status"] == "PENDING", (state, logs())
            assert time.monotonic() < deadline, (state, logs())
            time.sleep(0.5)
        worker_log = podman.logs(f"{project}_worker-deletions_1")
        assert re.search(r"Task deletions\.tasks\.\w+\[[-\w]+\] succeeded", worker_log), worker_log
        measures["full: memory of web after the sync, all processes' RSS (MB)"] = _rss_mb(
            podman, f"{project}_web_1"
        )

        # Down and up again: the same database, key and account; the schema checked, no new
        # password made.
        podman.compose(project, compose, "down", "-t", "2", env=env)
        start = time.monotonic()
        podman.compose(project, compose, "up", "-d", env=env)
        wait_until_serving(port, 300, logs)
        measures["full: podman-compose up (again) to serving (s)"] = round(
            time.monotonic() - start, 1
        )
        assert podman("wait", f"{project}_migrate_1", timeout=120).stdout.strip() == "0"
        assert "Staff account exists" in podman.logs(f"{project}_migrate_1")
        status, page = call(port, "GET", "/v1/subscriptions", token=token)
        assert status == 200, page
        kept = {s["feed_url"]: "deleted" in s for s in page["subscriptions"]}
        assert kept == {url: url == FEEDS[0] for url in FEEDS}, page
        assert call(port, "GET", f"/v1/subscriptions/{guids[FEEDS[0]]}", token=token)[0] == 410
        client = api.MygPodderClient("admin", password, root_url=f"http://127.0.0.1:{port}")
        assert sorted(client.get_subscriptions("laptop")) == FEEDS[1:]
        podman.compose(project, compose, "down", "-t", "2", "-v", env=env)
    finally:
        podman.remove_project(project)
    left = podman("ps", "-aq", "--filter", f"label=io.podman.compose.project={project}")
    assert left.stdout.strip() == ""
    assert project not in podman("volume", "ls", "-q").stdout
    assert project not in podman("network", "ls", "-q").stdout
