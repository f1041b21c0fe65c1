"""podman and podman-compose as make image-test drives them (docs/containers.md, "Testing the
image"), and the HTTP calls the tests make to what they start.

Each podman command is run as given first. Where this machine refuses podman's defaults (a
root that may not raise its resource limits; a kernel whose cgroup layout crun refuses), the
same settings are given on each command instead (`--ulimit` on `run`, `--runtime runc`):
nothing of the machine's own configuration is changed.
"""

import base64
import http.client
import json
import resource
import shutil
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
BASE_IMAGE = "localhost/debian:bookworm-slim"
# The host's CA bundle, handed to the build for pip (the Containerfile's PIP_CERT): where PyPI
# is reached through a TLS-inspecting proxy, only this bundle verifies it.
HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")


class Podman:
    """podman, with whatever this machine needs on each command; fails, never skips, without."""

    def __init__(self) -> None:
        for tool in ("podman", "podman-compose"):
            if shutil.which(tool) is None:
                pytest.fail(f"{tool} is not installed: make image-test installs it")
        self.global_args: list[str] = []
        self.run_args: list[str] = []
        if self("image", "exists", BASE_IMAGE, check=False).returncode != 0:
            pytest.fail(f"No image {BASE_IMAGE}: make image-test makes it")
        for _ in range(3):
            probe = self("run", *self.run_args, "--rm", BASE_IMAGE, "true", check=False)
            if probe.returncode == 0:
                return
            if "rlimit" in probe.stderr and not self.run_args:
                self.run_args = _ulimits()
            elif "hybrid" in probe.stderr and not self.global_args:
                self.global_args = ["--runtime", "runc"]
            else:
                break
        pytest.fail(f"podman cannot run a container here:\n{probe.stderr}")

    def __call__(
        self, *args: str, check: bool = True, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            ["podman", *self.global_args, *args],
            capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip
        if check and done.returncode != 0:
            pytest.fail(f"podman {' '.join(args)} failed:\n{_tail(done.stdout + done.stderr)}")
        return done

    def run(self, *args: str) -> str:
        """`podman run`, with this machine's limits; the container's id."""
        return self("run", *self.run_args, *args).stdout.strip()

    def build(self, tag: str, context: Path, *args: str) -> subprocess.CompletedProcess[str]:
        """`podman build` in Docker's format, which keeps HEALTHCHECK (OCI's has no place for
        it), with the host's CA bundle for pip when it has one."""
        ca = (
            ["-v", f"{HOST_CA}:/run/host-ca.crt:ro", "--build-arg", "PIP_CERT=/run/host-ca.crt"]
            if HOST_CA.exists()
            else []
        )
        return self(
            "build", "--format", "docker", *ca, *args, "-t", tag, str(context), timeout=1800
        )

    def logs(self, container: str) -> str:
        done = self("logs", container, check=False)
        return done.stdout + done.stderr

    def compose(
        self, project: str, file: Path, *args: str, env: dict[str, str], check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """podman-compose on `file`, as project `project`, with this machine's podman flags."""
        command = ["podman-compose", "-p", project, "-f", str(file)]
        if self.global_args:
            command.append(f"--podman-args={' '.join(self.global_args)}")
        if self.run_args:
            command.append(f"--podman-run-args={' '.join(self.run_args)}")
        done = subprocess.run(
            [*command, *args], capture_output=True, text=True, timeout=600, check=False,
            cwd=file.parent, env=env,
        )  # fmt: skip
        if check and done.returncode != 0:
            pytest.fail(
                f"podman-compose {' '.join(args)} failed:\n{_tail(done.stdout + done.stderr)}"
            )
        return done

    def remove_project(self, project: str) -> None:
        """Every container, volume and network of a compose project, whatever state it is in:
        podman-compose's own `down` leaves the network behind."""
        label = f"label=io.podman.compose.project={project}"
        containers = self("ps", "-aq", "--filter", label, check=False).stdout.split()
        if containers:
            self("rm", "-f", "-v", "-t", "2", *containers, check=False)
        volumes = self("volume", "ls", "-q", "--filter", label, check=False).stdout.split()
        named = self("volume", "ls", "-q", check=False).stdout.split()
        volumes += [name for name in named if name.startswith(f"{project}_")]
        if volumes:
            self("volume", "rm", "-f", *sorted(set(volumes)), check=False)
        networks = self("network", "ls", "-q", "--filter", label, check=False).stdout.split()
        self("network", "rm", "-f", *networks, f"{project}_default", check=False)


def _ulimits() -> list[str]:
    """The limits a container gets: at most this process's own hard limits, which root here
    cannot raise past (podman's defaults would)."""
    args = []
    for name, limit, ceiling in (
        ("nofile", resource.RLIMIT_NOFILE, 20000),
        ("nproc", resource.RLIMIT_NPROC, 32768),
    ):
        hard = resource.getrlimit(limit)[1]
        value = ceiling if hard == resource.RLIM_INFINITY else min(hard, ceiling)
        args += ["--ulimit", f"{name}={value}:{value}"]
    return args


def _tail(text: str, lines: int = 60) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def call(
    port: int,
    method: str,
    path: str,
    body: Any = None,
    token: str | None = None,
    basic: tuple[str, str] | None = None,
) -> tuple[int, Any]:
    """One request to 127.0.0.1:port; (0, None) when nothing answers."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if basic:
        headers["Authorization"] = "Basic " + base64.b64encode(":".join(basic).encode()).decode()
    try:
        conn.request(method, path, None if body is None else json.dumps(body), headers)
        response = conn.getresponse()
        payload = response.read()
    except OSError:
        return 0, None
    finally:
        conn.close()
    try:
        return response.status, json.loads(payload) if payload else None
    except ValueError:
        return response.status, payload.decode(errors="replace")


def wait_until_serving(port: int, seconds: float, why: Callable[[], str]) -> float:
    """Until GET /health answers 200 on the port; how long that took."""
    start = time.monotonic()
    while (status := call(port, "GET", "/health")[0]) != 200:
        if time.monotonic() - start > seconds:
            pytest.fail(f"Not serving after {seconds:g} s (last status {status}):\n{why()}")
        time.sleep(0.2)
    return time.monotonic() - start
