"""Both compose layouts behind nginx on the host, over TLS (docs/containers.md, "Behind a
proxy"), as the guide sets them up and nothing more: the proxy reaches the published port on
127.0.0.1, which the container sees as its network's gateway; the image believes that gateway's
X-Forwarded-Proto and X-Forwarded-For by default (home.proxies).

Two clients sign in through the proxy (the gpodder login, a session cookie), from two addresses
of this machine: the cookies are `Secure`, no page redirects to itself, and the one that guesses
passwords is locked out alone. nginx's certificate is made by the test; traffic stays on
loopback.
"""

import http.client
import re
import secrets
import shutil
import ssl
import subprocess
import time
from base64 import b64encode
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.containers.podman import Podman, free_port, wait_until_serving
from tests.containers.test_image import _environ, _name, _project

pytestmark = [pytest.mark.containers, pytest.mark.e2e]

NAME = "sync.example.com"
CLIENTS = ("127.0.0.1", "127.0.0.2")  # two people, as the proxy sees them
LIMIT = 10  # THROTTLE_LOGIN_RATE's default, 10/min


class Proxy:
    """nginx on this machine, TLS on `port`, in front of the service on `upstream`, with the
    guide's proxy headers (docs/self-hosting.md, "nginx")."""

    def __init__(self, folder: Path, upstream: int):
        self.folder, self.port = folder, free_port()
        self.cert, key = folder / "cert.pem", folder / "key.pem"
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
             "-subj", f"/CN={NAME}", "-addext", f"subjectAltName=DNS:{NAME},IP:127.0.0.1",
             "-keyout", str(key), "-out", str(self.cert)],
            check=True, capture_output=True,
        )  # fmt: skip
        (folder / "logs").mkdir()
        (folder / "nginx.conf").write_text(f"""
user root;
worker_processes 1;
pid {folder}/nginx.pid;
error_log {folder}/logs/error.log;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {folder}/body;
    proxy_temp_path {folder}/proxy;
    server {{
        listen 127.0.0.1:{self.port} ssl;
        server_name {NAME};
        ssl_certificate {self.cert};
        ssl_certificate_key {key};
        location / {{
            proxy_pass http://127.0.0.1:{upstream};
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        }}
    }}
}}
""")
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        self.process = subprocess.Popen(
            [nginx, "-p", str(folder), "-c", str(folder / "nginx.conf"), "-g", "daemon off;"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip

    def request(
        self, method: str, path: str, client: str, headers: dict[str, str] | None = None
    ) -> http.client.HTTPResponse:
        """One request over TLS from the address `client`, to the guide's name and this port."""
        context = ssl.create_default_context(cafile=str(self.cert))
        conn = http.client.HTTPSConnection(
            "127.0.0.1", self.port, context=context, timeout=30, source_address=(client, 0)
        )
        conn.request(method, path, b"", {"Host": f"{NAME}:{self.port}", **(headers or {})})
        response = conn.getresponse()
        response.read()
        conn.close()
        return response

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=20)


@pytest.fixture
def proxy_at(tmp_path: Path) -> Iterator[list[Proxy]]:
    made: list[Proxy] = []
    yield made
    for proxy in made:
        proxy.stop()


def log_in(proxy: Proxy, client: str, password: str) -> http.client.HTTPResponse:
    """gPodder's login (Basic, a session cookie back) as `admin`, from `client`."""
    basic = b64encode(f"admin:{password}".encode()).decode()
    return proxy.request(
        "POST", "/api/2/auth/admin/login.json", client, {"Authorization": f"Basic {basic}"}
    )


def signs_in_two_clients_behind_the_proxy(proxy: Proxy, password: str) -> None:
    # Up once nginx answers.
    deadline = time.monotonic() + 20
    while True:
        try:
            page = proxy.request("GET", "/login/", CLIENTS[0])
            break
        except OSError:
            assert proxy.process.poll() is None, proxy.process.stderr.read()  # type: ignore[union-attr]
            assert time.monotonic() < deadline
            time.sleep(0.2)
    # Served over the proxy's HTTPS, not sent to https:// again and again.
    assert page.status == 200, (page.status, page.getheader("Location"))
    assert _cookies(page), page.headers  # the sign-in form's CSRF cookie
    assert all(_secure(cookie) for cookie in _cookies(page)), _cookies(page)
    for client in CLIENTS:
        signed_in = log_in(proxy, client, password)
        assert signed_in.status == 200, signed_in.status
        (session,) = [c for c in _cookies(signed_in) if c.startswith("sessionid=")]
        assert _secure(session), session
    # One client guesses: it alone is locked out; the other signs in still.
    statuses = [log_in(proxy, CLIENTS[1], "wrong").status for _ in range(LIMIT + 2)]
    assert statuses == [401] * LIMIT + [429] * 2, statuses
    assert log_in(proxy, CLIENTS[1], password).status == 429
    assert log_in(proxy, CLIENTS[0], password).status == 200


def _cookies(response: http.client.HTTPResponse) -> list[str]:
    return response.headers.get_all("Set-Cookie") or []


def _secure(cookie: str) -> bool:
    return "secure" in [part.strip().lower() for part in cookie.split(";")]


def test_the_home_compose_file_behind_nginx_with_tls(
    podman: Podman, image: str, tmp_path: Path, proxy_at: list[Proxy]
):
    """compose.yaml published on loopback for the proxy, and PUBLIC_URL in compose.override.yaml
    (docs/containers.md): nothing else set."""
    project, port = _name("proxy-home"), free_port()
    compose = _project(tmp_path, "compose.yaml")
    proxy = Proxy(tmp_path, port)
    proxy_at.append(proxy)
    override = compose.parent / "compose.override.yaml"
    override.write_text(
        f"services:\n  server:\n    environment:\n      PUBLIC_URL: https://{NAME}:{proxy.port}\n"
    )
    env = {**_environ(), "PODSYNC_IMAGE": image, "PODSYNC_PORT": f"127.0.0.1:{port}"}
    try:
        podman.compose(project, compose, "-f", str(override), "up", "-d", env=env)
        wait_until_serving(port, 120, lambda: podman.logs(f"{project}_server_1"))
        log = podman.logs(f"{project}_server_1")
        found = re.search(r"Sign in as 'admin' with the password: (\S+)", log)
        assert found, log
        signs_in_two_clients_behind_the_proxy(proxy, found[1])
        podman.compose(project, compose, "down", "-t", "2", "-v", env=env)
    finally:
        podman.remove_project(project)


def test_the_full_layout_behind_nginx_with_tls(
    podman: Podman, image: str, stand_ins: None, tmp_path: Path, proxy_at: list[Proxy]
):
    """compose.full.yaml with the guide's `.env` (docs/self-hosting.md, "The full layout"): a
    secret key, the database's password and the address people use, nothing else."""
    project, port = _name("proxy-full"), free_port()
    proxy = Proxy(tmp_path, port)
    proxy_at.append(proxy)
    env_file = (
        f"SECRET_KEY={secrets.token_urlsafe(50)}\n"
        f"POSTGRES_PASSWORD={secrets.token_hex(24)}\n"
        f"PUBLIC_URL=https://{NAME}:{proxy.port}\n"
    )
    compose = _project(tmp_path, "compose.full.yaml", env_file)
    env = {**_environ(), "PODSYNC_IMAGE": image, "PODSYNC_PORT": f"127.0.0.1:{port}"}
    try:
        podman.compose(project, compose, "up", "-d", env=env)
        # /health is exempt from the redirect to HTTPS: it answers on the port directly.
        wait_until_serving(port, 300, lambda: podman.logs(f"{project}_web_1")[-3000:])
        assert podman("wait", f"{project}_migrate_1", timeout=120).stdout.strip() == "0"
        log = podman.logs(f"{project}_migrate_1")
        found = re.search(r"Created staff account 'admin' with password: (\S+)", log)
        assert found, log
        signs_in_two_clients_behind_the_proxy(proxy, found[1])
        podman.compose(project, compose, "down", "-t", "2", "-v", env=env)
    finally:
        podman.remove_project(project)
