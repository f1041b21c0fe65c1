"""Fixtures that run the real thing: a Redis broker, Celery worker processes and a browser.

The worker is a separate `celery -A config worker -B` process on the test database, so these
tests commit their data (transactional_db) for it to see.
"""

import contextlib
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from kombu import pools as kombu_pools
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.remote.webdriver import WebDriver

from config.celery import app
from tests import servers
from tests.e2e.browser import reset_browser, start_browser


@pytest.fixture(scope="session")
def redis_server() -> Iterator[servers.RedisServer]:
    with servers.redis() as server:
        yield server


def _reset_broker_pools() -> None:
    """Forget broker connections made with the previous broker_url."""
    app._pool = None  # type: ignore[attr-defined]
    app.amqp._producer_pool = None  # type: ignore[attr-defined]
    kombu_pools.reset()


@pytest.fixture
def broker(redis_server: servers.RedisServer, settings: Any) -> Iterator[servers.RedisServer]:
    """This process sends tasks to the real Redis instead of running them in-process."""
    if redis_server.process is None:
        redis_server.start()
    settings.REDIS_URL = redis_server.url
    app.conf.update(broker_url=redis_server.url, task_always_eager=False)
    _reset_broker_pools()
    import redis

    redis.Redis.from_url(redis_server.url).flushall()
    try:
        yield redis_server
    finally:
        app.conf.update(broker_url="memory://", task_always_eager=True)
        _reset_broker_pools()
        if redis_server.process is None:
            redis_server.start()


@pytest.fixture
def worker_factory(
    broker: servers.RedisServer, transactional_db: None, tmp_path: Path
) -> Iterator[Callable[..., servers.Worker]]:
    """Start workers on the test database and the test Redis; all are stopped at the end."""
    db = connection.settings_dict
    started: list[servers.Worker] = []

    def start(
        *, queues: str = "", name: str = "", beat: bool = True, **overrides: str | None
    ) -> servers.Worker:
        """`queues`: the worker's `-Q` (every queue when empty); `name`, its node name (each of
        several at once needs its own); `beat`: whether it runs beat too (`-B`), as one worker
        at most should. `overrides`: settings from the environment; None takes a setting's
        default."""
        env: dict[str, str | None] = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings.test",
            "TEST_DATABASE_URL": (
                f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
            ),
            "REDIS_URL": broker.url,
            "DELETION_RESEND_AFTER": "2",
            "DELETION_SWEEP_INTERVAL": "1",
            "DELETION_MAX_ATTEMPTS": "20",
            **overrides,
        }
        worker = servers.Worker(
            {key: value for key, value in env.items() if value is not None},
            tmp_path / f"worker{len(started)}.log",
        ).start(beat=beat, name=name, queues=queues)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()


def pages_settings(folder: Path) -> dict[str, str]:
    """The production settings (config.settings.base) with STATIC_ROOT at `folder`'s files
    (static_settings): the pages need collectstatic's manifest, which must not be written into
    the working tree."""
    return {
        "PYTHONPATH": os.pathsep.join([str(folder), str(servers.ROOT)]),
        "DJANGO_SETTINGS_MODULE": "production_settings",
    }


@pytest.fixture(scope="session")
def static_settings(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of collected static files and the settings module that serves them."""
    folder = tmp_path_factory.mktemp("production")
    (folder / "production_settings.py").write_text(
        "from config.settings.base import *  # noqa: F403\n"
        f"STATIC_ROOT = {str(folder / 'static')!r}\n"
    )
    env = {
        **os.environ,
        **pages_settings(folder),
        "SECRET_KEY": "static-files-secret-key-long-enough-for-hs256-signing-0123",
        "DATABASE_URL": "sqlite:///unused.sqlite3",
    }
    env.pop("DEBUG", None)
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"],
        cwd=servers.ROOT, env=env, check=True, timeout=300,
    )  # fmt: skip
    return folder


@pytest.fixture(scope="session")
def _chromium() -> Iterator[list[WebDriver]]:
    """The process's one Chromium, started by the first test that asks for a browser (a start
    costs a second or two of CPU) and quit at the end; empty when none is running."""
    running: list[WebDriver] = []
    yield running
    for driver in running:
        driver.quit()


@pytest.fixture
def browser(_chromium: list[WebDriver]) -> WebDriver:
    """A browser as new: the process's Chromium, with what the test before left behind (its
    cookies, storage, permissions, size and emulation, other windows) cleared; a fresh one when
    that cannot be done (the test before left an alert open, or Chromium died)."""
    if _chromium:
        try:
            reset_browser(_chromium[0])
            return _chromium[0]
        except WebDriverException:
            with contextlib.suppress(WebDriverException):
                _chromium.pop().quit()
    _chromium.append(start_browser())
    reset_browser(_chromium[0])
    return _chromium[0]


@pytest.fixture
def site(live_server: Any, mailbox: Any, settings: Any, plain_http_cookies: None) -> str:
    """The live server, where the links in mail (caught by `mailbox`) lead."""
    settings.PUBLIC_URL = live_server.url
    return str(live_server.url)
