"""Small helpers the tests share."""

import base64
import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from django.db import connection
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from accounts import active, activity, authentication, sessions
from accounts.services import refresh_token_for
from deletions.models import Deletion
from subscriptions import services
from tests import servers

TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def assert_error(response: Any, status: int, message: str | None = None) -> dict[str, Any]:
    """The error object: `code` is the status as a JSON string, nothing but `errors` is added."""
    assert response.status_code == status, response.content[:500]
    assert response["Content-Type"].startswith("application/json")
    body = json.loads(response.content)
    assert isinstance(body, dict)
    assert body["code"] == str(status)
    assert isinstance(body["message"], str)
    assert body["message"]
    assert set(body) <= {"code", "message", "errors"}
    if message is not None:
        assert body["message"] == message
    return body


class Clock:
    """Stands in for core.clock: the service's time, moved only by the test."""

    def __init__(self) -> None:
        self.now = datetime(2024, 2, 23, 14, 0, 0, 123000, tzinfo=UTC)

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)

    @property
    def stamp(self) -> str:
        return self.now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.now.microsecond // 1000:03d}Z"


def subscribe(user: Any, feed_url: str, guid: str | None = None) -> Any:
    """Add one subscription through the service, as POST /v1/subscriptions would."""
    result = services.subscription_add_many(
        user=user, entries=[services.AddEntry(feed_url=feed_url, guid=guid)]
    )
    assert not result.failure, result.failure
    return result.success[0]


# alice and bob's password (tests/conftest.py), which their apps send.
PASSWORD = "correct horse battery staple"


def basic(username: str, password: str = PASSWORD, encoding: str = "utf-8") -> str:
    """The Authorization header of HTTP Basic, as the gpodder and Nextcloud apps send it."""
    return "Basic " + base64.b64encode(f"{username}:{password}".encode(encoding)).decode()


def basic_app(username: str) -> APIClient:
    """A gpodder or Nextcloud app of `username`'s, sending HTTP Basic on every request (as Kasts
    does), with a cookie jar of its own."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=basic(username))
    return client


def client_for(user: Any) -> APIClient:
    """An API client carrying a real bearer token of `user`."""
    client = APIClient()
    token = refresh_token_for(user).access_token
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def listed(client: Client, url: str) -> set[int]:
    """The ids of the rows an admin list shows."""
    response = client.get(url)
    assert response.status_code == 200, response.content[:500]
    return {obj.pk for obj in response.context["cl"].result_list}


def make_deletion(user: Any, status: str) -> Deletion:
    return Deletion.objects.create(
        user=user, guid=uuid.uuid4(), status=status, requested=timezone.now()
    )


AWAY = "Service unavailable: the database cannot be reached"


@contextmanager
def database_away() -> Iterator[None]:
    """The service's connection goes to a port nobody listens on, for the block."""
    port = connection.settings_dict["PORT"]
    connection.close()
    connection.settings_dict["PORT"] = str(servers.free_port())
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict["PORT"] = port


def away_answer(response: Any, message: str) -> None:
    assert_error(response, 503, message)
    assert response["Retry-After"] == "5"


def wait_until(
    condition: Callable[[], bool], timeout: float, what: str | Callable[[], str]
) -> None:
    """Poll `condition`, soon at first and then less often (from 0.05 s apart to 0.5 s: a
    condition read through the database costs a few milliseconds, and a wait for a worker or a
    restart lasts a minute); fail the test after `timeout` seconds.

    `what` names what was awaited, or gives it (a worker's log) when the wait fails.
    """
    deadline = time.monotonic() + timeout
    pause = 0.05
    while not condition():
        if time.monotonic() > deadline:
            detail = what() if callable(what) else what
            raise AssertionError(f"timed out after {timeout}s waiting for {detail}")
        time.sleep(pause)
        pause = min(pause * 1.5, 0.5)


T = TypeVar("T")


def at_once(*calls: Callable[[], T]) -> list[T]:
    """Run the calls in threads released together, for races; results (or errors) in order.

    Each thread has its own database connection, closed when its call is done.
    """
    barrier = threading.Barrier(len(calls))

    def run(call: Callable[[], T]) -> T:
        try:
            barrier.wait(timeout=30)
            return call()
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        futures = [pool.submit(run, call) for call in calls]
        return [future.result(timeout=60) for future in futures]


def billion_laughs(document: str, *, levels: int = 9) -> bytes:
    """`document` (which uses `&lolN;`, N = levels) after a DTD whose entity expands tenfold per
    level: 10**levels "lol"s from a few hundred bytes, if a parser ever expanded it."""
    entities = ['<!ENTITY lol0 "lol">'] + [
        f'<!ENTITY lol{n} "{f"&lol{n - 1};" * 10}">' for n in range(1, levels + 1)
    ]
    dtd = "<!DOCTYPE lolz [\n " + "\n ".join(entities) + "\n]>"
    return f'<?xml version="1.0"?>\n{dtd}\n{document}'.encode()


def plan_of(run: Callable[[], T]) -> tuple[dict[str, Any], T]:
    """The plan PostgreSQL ran the last query of `run()` with, and its result."""
    ran = []

    def keep(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        ran.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(keep):
        result = run()
    sql, params = ran[-1]
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
        return cursor.fetchone()[0][0]["Plan"], result


def nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from nodes(child)


def statements_of(run: Callable[[], T]) -> tuple[list[tuple[str, Any]], T]:
    """Every statement `run()` sent, with its parameters, and its result."""
    sent: list[tuple[str, Any]] = []

    def keep(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        sent.append((sql, params[0] if many and params else params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(keep):
        result = run()
    return sent, result


def substring_searches(statements: list[tuple[str, Any]]) -> list[str]:
    """The statements that match a pattern with a leading wildcard (a substring search): no
    btree index answers one, so on a big table it reads every row."""
    found = []
    for sql, params in statements:
        wild = [p for p in params or () if isinstance(p, str) and p[:1] == "%"]
        if wild:
            found.append(f"{wild}: {sql[:300]}")
    return found


def migrate(targets: list[tuple[str, str]]) -> Any:
    """Migrate the test database to `targets`; the models as they were there (tests of
    migrations, with the back_to_latest fixture)."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def forget_all() -> None:
    """Empties this process's caches of verified tokens, active users, app sessions and the
    accounts whose activity it noted, as a process that has not seen the user in
    AUTH_USER_CACHE_SECONDS."""
    authentication.forget_verified_tokens()
    active.active_users.clear()
    sessions.app_sessions.clear()
    activity.noted.clear()


def health_answer(response: Any) -> dict[str, Any]:
    """/health's answer without the home server's own `sqlite` figures (tests/home checks them),
    which it gives on SQLite and only there."""
    body: dict[str, Any] = response.json()
    assert ("sqlite" in body) == (connection.vendor == "sqlite"), body
    body.pop("sqlite", None)
    return body


def totp_code(device: Any, steps_ahead: int = 0) -> str:
    """The code an authenticator app shows for `device` (django-otp's TOTPDevice), `steps_ahead`
    steps of 30 seconds on: django-otp refuses a step used already, and allows one of drift."""
    from django_otp.oath import TOTP

    totp = TOTP(device.bin_key, device.step, device.t0, device.digits, device.drift)
    totp.time = time.time() + steps_ahead * device.step
    return f"{totp.token():06d}"
