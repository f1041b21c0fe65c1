"""`make run` in a fresh copy of the repository, reached as a phone on the LAN reaches it
(docs/self-hosting.md): over plain HTTP, by a home network's name (`podsync.home.arpa`, which
this test's clients resolve to loopback, so that the name is in every `Host` and URL).

mygpoclient syncs, AntennaPod logs in with the Nextcloud login (its browser step in Chromium);
the server is restarted and everything is still there, the browser still signed in; four apps
sync at once with nothing but 200s; a backup taken while it serves restores; and a SIGKILL in the
middle of four apps' uploads loses no write it acknowledged and leaves an intact database.
"""

import contextlib
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import requests
from mygpoclient import api
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from tests.e2e.browser import start_browser
from tests.e2e.trickle import trickled_head, trickling
from tests.names import HOME_NETWORK_NAMES
from tests.servers import ROOT, free_port

pytestmark = pytest.mark.e2e

LAN_NAME = "podsync.home.arpa"
ANTENNAPOD = "AntennaPod/3.5.0"
FORM = {"User-Agent": ANTENNAPOD, "Content-Type": "application/x-www-form-urlencoded"}
TIMEOUT = 30


@pytest.fixture(scope="module")
def lan_name() -> Iterator[None]:
    """LAN_NAME resolves to loopback in this process (mygpoclient's urllib, requests)."""
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        return real("127.0.0.1" if host == LAN_NAME else host, *args, **kwargs)

    socket.getaddrinfo = getaddrinfo
    try:
        yield
    finally:
        socket.getaddrinfo = real


def fresh_copy(target: Path) -> Path:
    """The repository as a clone has it (tracked and new files, nothing ignored), with times
    kept so that make finds the shared venv up to date."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.split(b"\0")  # fmt: skip
    for name in filter(None, listed):
        source = ROOT / name.decode()
        if source.is_file():
            (target / name.decode()).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name.decode())
    return target


class HomeServer:
    """`make run` in `folder`, on `port`: what a person types, with the repository's venv, and
    the settings `env` besides."""

    def __init__(self, folder: Path, port: int, env: dict[str, str] | None = None):
        self.folder, self.port, self.env = folder, port, env or {}
        self.process: subprocess.Popen[bytes] | None = None
        self.output = folder / "make-run.log"

    @property
    def url(self) -> str:
        return f"http://{LAN_NAME}:{self.port}"

    def start(self) -> str:
        """Start, wait until it serves, and return what it printed."""
        offset = self.output.stat().st_size if self.output.exists() else 0
        with open(self.output, "ab") as log:
            self.process = subprocess.Popen(
                ["make", "run", f"PORT={self.port}", f"VENV={ROOT / '.venv'}"],
                cwd=self.folder, env={**shell(), **self.env}, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + 120
        while not self._serving():
            assert self.process.poll() is None, self.printed(offset)
            assert time.monotonic() < deadline, self.printed(offset)
            time.sleep(0.2)
        return self.printed(offset)

    def printed(self, offset: int = 0) -> str:
        return self.output.read_bytes()[offset:].decode(errors="replace")

    def _serving(self) -> bool:
        with contextlib.suppress(requests.RequestException):
            return requests.get(f"{self.url}/health", timeout=2).status_code == 200
        return False

    def stop(self, how: signal.Signals = signal.SIGTERM) -> None:
        assert self.process is not None
        server = psutil.Process(self.process.pid).children(recursive=True)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, how)
        self.process.wait(timeout=60)
        if how != signal.SIGKILL:
            # As Ctrl+C: make returns once the server is gone, so a restore may follow at once
            # (docs/self-hosting.md): a worker still closing its connection would write into it.
            left = [p.pid for p in server if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
            assert not left, f"make returned while the server's {left} still ran"
        deadline = time.monotonic() + 30
        while _listening(self.port):  # the worker goes last
            assert time.monotonic() < deadline, "the server did not stop"
            time.sleep(0.1)


def shell() -> dict[str, str]:
    """A person's shell: none of the settings the test process set for itself."""
    return {name: os.environ[name] for name in ("PATH", "HOME", "LANG") if name in os.environ}


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, lan_name: None) -> Iterator[HomeServer]:
    server = HomeServer(fresh_copy(tmp_path_factory.mktemp("clone")), free_port())
    try:
        yield server
    finally:
        if server.process is not None and server.process.poll() is None:
            server.stop()


def password_printed(text: str) -> str:
    found = re.search(r"Sign in as 'admin' with the password: (\S+)", text)
    assert found, text
    return found[1]


def allow_in_browser(browser: WebDriver, login_url: str, password: str) -> None:
    wait = WebDriverWait(browser, 20)
    browser.get(login_url)
    wait.until(expected_conditions.url_contains("/login/?next="))
    browser.find_element(By.NAME, "username").send_keys("admin")
    browser.find_element(By.NAME, "password").send_keys(password)
    browser.find_element(By.CSS_SELECTOR, "main button[type=submit]").click()
    wait.until(expected_conditions.url_to_be(login_url))
    browser.find_element(By.CSS_SELECTOR, "button[value=allow]").click()
    wait.until(expected_conditions.text_to_be_present_in_element((By.TAG_NAME, "h1"), "sync now"))


def antennapod_login(home: HomeServer, browser: WebDriver, password: str) -> dict[str, Any]:
    """AntennaPod's Nextcloud option, given the address `http://podsync.home.arpa:PORT`."""
    started = requests.post(
        f"{home.url}/index.php/login/v2", data=b"", headers=FORM, timeout=TIMEOUT
    )
    assert started.status_code == 200, started.text
    flow = started.json()
    assert flow["login"].startswith(f"{home.url}/login/flow/")
    allow_in_browser(browser, flow["login"], password)
    poll = requests.post(
        flow["poll"]["endpoint"], data=f"token={flow['poll']['token']}", headers=FORM, timeout=10
    )
    assert poll.status_code == 200, poll.text
    return dict(poll.json())


def upload_actions(
    session: requests.Session, url: str, app: int, start: int, count: int
) -> requests.Response:
    actions: list[dict[str, Any]] = [
        {
            "podcast": f"https://feeds.example.com/{app}.xml",
            "episode": f"https://cdn.example.com/{app}/{n}.mp3",
            "action": "play",
            "timestamp": "2026-11-26T10:00:00",
            "started": 0,
            "position": n,
            "total": 3600,
            "device": f"app{app}",
        }
        for n in range(start, start + count)
    ]
    return session.post(f"{url}/api/2/episodes/admin.json", json=actions, timeout=TIMEOUT)


class Apps:
    """Four apps uploading episode actions at once, each keeping what the server acknowledged."""

    def __init__(self, home: HomeServer, password: str, rounds: int | None):
        self.home, self.password, self.rounds = home, password, rounds
        self.acknowledged: set[str] = set()
        self.answers: list[int] = []
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def run(self, app: int) -> None:
        session = requests.Session()
        session.auth = ("admin", self.password)
        n = 0
        while not self.stop.is_set() and (self.rounds is None or n < self.rounds * 5):
            try:
                response = upload_actions(session, self.home.url, app, n, 5)
            except requests.RequestException:
                return  # the server is gone: what it acknowledged is what counts
            with self.lock:
                self.answers.append(response.status_code)
                if response.status_code == 200:
                    self.acknowledged |= {
                        f"https://cdn.example.com/{app}/{k}.mp3" for k in range(n, n + 5)
                    }
            n += 5

    def start(self) -> list[threading.Thread]:
        threads = [threading.Thread(target=self.run, args=(app,)) for app in range(4)]
        for thread in threads:
            thread.start()
        return threads


def stored_episodes(home: HomeServer, password: str) -> set[str]:
    response = requests.get(
        f"{home.url}/api/2/episodes/admin.json",
        params={"since": 0},
        auth=("admin", password),
        timeout=TIMEOUT,
    )
    assert response.status_code == 200, response.text
    return {action["episode"] for action in response.json()["actions"]}


def integrity(database: Path) -> str:
    with contextlib.closing(sqlite3.connect(database)) as conn:
        # Django's SQLite connections have REGEXP, which the tables' checks use.
        conn.create_function("REGEXP", 2, lambda p, s: re.search(p, s or "") is not None)
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])


def test_the_home_server_syncs_restarts_and_keeps_everything(home: HomeServer) -> None:
    printed = home.start()
    password = password_printed(printed)
    assert f"http://{socket.gethostname().lower()}.local:{home.port}" in printed
    assert "Your data (database and secret key)" in printed
    assert "Listening at: http://0.0.0.0:" in printed
    assert (home.folder / "data" / "secret_key").exists()
    # What keeps its writes safe, read back from the running server's own connection: WAL,
    # synchronous=FULL (2), and a busy timeout so that writers wait instead of failing.
    health = requests.get(f"{home.url}/health", timeout=TIMEOUT).json()
    assert health["sqlite"] == {"journal_mode": "wal", "synchronous": 2, "busy_timeout": 20000}

    # The site's icon, where browsers ask for it and where the pages link it (collected).
    icon = requests.get(f"{home.url}/favicon.ico", timeout=TIMEOUT)
    assert icon.status_code == 200
    assert icon.content[:4] == b"\x00\x00\x01\x00"
    signing_in = requests.get(f"{home.url}/login/", timeout=TIMEOUT).text
    linked = re.search(r'<link rel="icon" href="([^"]+\.ico)"', signing_in)
    assert linked is not None, signing_in
    assert requests.get(home.url + linked[1], timeout=TIMEOUT).content == icon.content

    # mygpoclient, as gPodder runs it, over plain HTTP by the LAN name.
    client = api.MygPodderClient("admin", password, root_url=home.url)
    assert client.update_device_settings("laptop", caption="gPodder", type="laptop") is True
    client.update_subscriptions("laptop", add_urls=["https://podnews.net/rss"])
    assert client.pull_subscriptions("phone", since=0).add == ["https://podnews.net/rss"]

    # AntennaPod's Nextcloud login: the server it keeps is the address typed, port included.
    browser = start_browser(f"--host-resolver-rules=MAP {LAN_NAME} 127.0.0.1")
    try:
        found = antennapod_login(home, browser, password)
        assert found["server"] == home.url
        app_auth = (found["loginName"], found["appPassword"])
        upload = requests.post(
            f"{found['server']}/index.php/apps/gpoddersync/subscription_change/create",
            json={"add": ["https://feeds.example.com/antennapod.xml"], "remove": []},
            auth=app_auth,
            headers={"User-Agent": ANTENNAPOD},
            timeout=TIMEOUT,
        )
        assert upload.status_code == 200, upload.text

        # Restarted: no new password, the same key, the browser still signed in, all kept.
        key = (home.folder / "data" / "secret_key").read_text()
        home.stop()
        printed = home.start()
        assert "with the password" not in printed
        assert "Forgot the 'admin' password?" in printed
        assert (home.folder / "data" / "secret_key").read_text() == key
        browser.get(f"{home.url}/podcasts/")
        assert "/login/" not in browser.current_url
        assert "podnews.net" in browser.page_source
    finally:
        browser.quit()
    synced = requests.get(
        f"{home.url}/index.php/apps/gpoddersync/subscriptions",
        params={"since": 0},
        auth=app_auth,
        headers={"User-Agent": ANTENNAPOD},
        timeout=TIMEOUT,
    )
    assert synced.status_code == 200, synced.text
    assert set(synced.json()["add"]) == {
        "https://podnews.net/rss",
        "https://feeds.example.com/antennapod.xml",
    }
    again = api.MygPodderClient("admin", password, root_url=home.url)
    assert "https://feeds.example.com/antennapod.xml" in again.pull_subscriptions("laptop", 0).add

    # Four apps at once: nothing but 200s.
    apps = Apps(home, password, rounds=10)
    for thread in apps.start():
        thread.join(timeout=300)
    assert apps.answers
    assert set(apps.answers) == {200}, sorted(set(apps.answers))
    assert stored_episodes(home, password) >= apps.acknowledged

    # A backup taken while four apps write, with the one documented command, restores.
    apps = Apps(home, password, rounds=None)
    threads = apps.start()
    backup = home.folder / "backup.sqlite3"
    done = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "python"), "manage.py", "backup", str(backup)],
        cwd=home.folder, env=shell(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    apps.stop.set()
    for thread in threads:
        thread.join(timeout=120)
    assert done.returncode == 0, done.stderr
    assert set(apps.answers) == {200}, sorted(set(apps.answers))
    assert integrity(backup) == "ok"
    with contextlib.closing(sqlite3.connect(backup)) as conn:
        backed_up = {row[0] for row in conn.execute("SELECT episode FROM episodes_episodeaction")}
    assert len(backed_up) >= 200

    # Restored as docs/self-hosting.md says: stopped, the copy put in the database's place.
    home.stop()
    data = home.folder / "data"
    for name in ("db.sqlite3-wal", "db.sqlite3-shm"):
        (data / name).unlink(missing_ok=True)
    shutil.copy(backup, data / "db.sqlite3")
    home.start()
    assert stored_episodes(home, password) == backed_up
    assert again.pull_subscriptions("laptop", 0).add


def test_a_power_cut_in_four_apps_uploads_loses_no_acknowledged_write(home: HomeServer) -> None:
    """SIGKILL, as a power cut leaves the process tree, in the middle of four apps' uploads."""
    if home.process is None or home.process.poll() is not None:
        home.start()
    password = _password_of(home)
    apps = Apps(home, password, rounds=None)
    threads = apps.start()
    deadline = time.monotonic() + 60
    while len(apps.acknowledged) < 100:
        assert time.monotonic() < deadline, apps.answers[-5:]
        time.sleep(0.05)
    home.stop(signal.SIGKILL)
    apps.stop.set()
    for thread in threads:
        thread.join(timeout=60)
    assert set(apps.answers) == {200}, sorted(set(apps.answers))

    database = home.folder / "data" / "db.sqlite3"
    assert integrity(database) == "ok"
    home.start()
    missing = apps.acknowledged - stored_episodes(home, password)
    assert not missing, sorted(missing)[:5]
    assert integrity(database) == "ok"


def test_each_thread_keeps_its_database_connection_between_requests(home: HomeServer) -> None:
    """Opening a SQLite connection costs about a tenth of a sync request's CPU, so the server's
    threads keep theirs (CONN_MAX_AGE): once the requests are answered, the database is still
    open in the server."""
    if home.process is None or home.process.poll() is not None:
        home.start()
    for _ in range(10):  # /health reads the database
        assert requests.get(f"{home.url}/health", timeout=TIMEOUT).status_code == 200
    assert home.process is not None
    database = str((home.folder / "data" / "db.sqlite3").resolve())
    holding = [
        process.pid
        for process in psutil.Process(home.process.pid).children(recursive=True)
        if any(opened.path == database for opened in process.open_files())
    ]
    assert holding, "no process of the server holds the database open between requests"


def _password_of(home: HomeServer) -> str:
    return password_printed(home.printed())


def test_phones_that_vanish_mid_request_do_not_stop_the_home_server(home: HomeServer) -> None:
    """The home server has four threads. Eight phones that lost their network half-way through
    sending a request (no FIN ever comes) used to hold all four until a restart; the others are
    answered at once now, and each half-sent request is let go (tests/e2e/test_slow_clients.py
    tries every kind of slow client on a smaller worker)."""
    if home.process is None or home.process.poll() is not None:
        home.start()
    host = ("127.0.0.1", home.port)
    vanished = [socket.create_connection(host) for _ in range(8)]
    try:
        for sock in vanished:
            sock.sendall(b"POST /api/2/episodes/alice.json HTTP/1.1\r\nHost: localhost\r\n")
        for _ in range(3):
            started = time.monotonic()
            assert requests.get(f"{home.url}/health", timeout=TIMEOUT).status_code == 200
            assert time.monotonic() - started < 1
    finally:
        for sock in vanished:
            sock.close()


def test_trickled_bodies_do_not_stop_the_home_server(home: HomeServer) -> None:
    """Two dozen bodies sent at 600 bytes a second, half within the limit (each held one of
    the four threads until it had all arrived, 35 minutes for 1 MiB) and half declared over it
    (held one while the 413 read them away): a phone's sync and /health are still answered
    within a second while they trickle."""
    if home.process is None or home.process.poll() is not None:
        home.start()
    password = password_printed(home.printed())
    heads = [trickled_head("/api/2/episodes/admin.json", 1024 * 1024)] * 12
    heads += [trickled_head("/login/", 10 * 1024 * 1024, "application/x-www-form-urlencoded")] * 12
    session = requests.Session()
    session.auth = ("admin", password)
    sync = f"{home.url}/api/2/devices/admin.json"
    assert session.get(sync, timeout=TIMEOUT).status_code == 200  # its password checked once
    with trickling(home.port, heads, rate=600):
        time.sleep(0.5)
        stop = time.monotonic() + 3
        while time.monotonic() < stop:
            for url, client in ((f"{home.url}/health", requests), (sync, session)):
                started = time.monotonic()
                assert client.get(url, timeout=TIMEOUT).status_code == 200
                assert time.monotonic() - started < 1, url


# What routers, mDNS, Tailscale and a container's host call the machine (docs/self-hosting.md,
# "Names"), and names a stranger could point at it.
ROUTER_NAMES = [*HOME_NETWORK_NAMES, "diskstation:5000", "192.168.1.50:8000"]
STRANGERS_NAMES = ["evil.example", "nas.lan.evil.example", "8.8.8.8"]


def _get(port: int, host: bytes, path: str = "/login/") -> tuple[int, str]:
    """GET `path` with this Host, byte for byte, as gunicorn receives it."""
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
        sock.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: " + host + b"\r\n"
                     b"Connection: close\r\n\r\n")  # fmt: skip
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), body.decode(errors="replace")


def test_the_home_server_answers_every_home_networks_names(home: HomeServer) -> None:
    if home.process is None or home.process.poll() is not None:
        home.start()
    for name in ROUTER_NAMES:
        assert _get(home.port, name.encode())[0] == 200, name
    for name in STRANGERS_NAMES:
        status, page = _get(home.port, name.encode())
        assert status == 400, name
        assert f"EXTRA_ALLOWED_HOSTS={name}" in page, page
    # Unicode, a NUL, markup and a long name: a 400 each, never a 500, nothing echoed as markup.
    for raw in ("café.example".encode(), b"nas\x00.lan", b"<b>x</b>", b"n" * 7000):
        status, page = _get(home.port, raw)
        assert status == 400, raw[:40]
        assert "<b>x</b>" not in page
        assert len(page) < 5000
