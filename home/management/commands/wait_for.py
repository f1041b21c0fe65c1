"""Wait until what a process of the full layout needs answers, then become that process
(docs/containers.md): `manage.py wait_for --database --broker --migrated -- gunicorn ...`.

Each container of compose.full.yaml starts this way, because a container runtime starts the
database, Redis and the service together, and compose's health conditions are not honoured
everywhere: a web process or a worker that met a database not yet up would exit, be started
again, and fill the log with tracebacks in a loop. Here it says in one line what it waits for
and why, and waits. `--migrated` also waits for the migrate service to bring the schema up to
date, so that no process serves an older schema than its code during an upgrade.
"""

import os
import re
import sys
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError, connections
from django.db.migrations.executor import MigrationExecutor

# How often each check is made again while waiting.
INTERVAL = 1.0


class Command(BaseCommand):
    help = (
        "Wait for the database (--database), the broker (--broker) and the migrations "
        "(--migrated); then run the command given after --, in place of this one."
    )
    # The checks read the database's state, which is what is waited for.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--database", action="store_true", help="Wait for DATABASE_URL.")
        parser.add_argument("--broker", action="store_true", help="Wait for REDIS_URL.")
        parser.add_argument(
            "--migrated",
            action="store_true",
            help="Wait until every migration is applied (by another process): implies --database.",
        )
        parser.add_argument(
            "--timeout",
            type=float,
            default=60.0,
            help="Seconds to wait at most, then fail saying what did not answer; 0 waits on.",
        )
        parser.add_argument("command", nargs="*", help="What to run once all answer (after --).")

    def handle(
        self,
        *args: Any,
        database: bool,
        broker: bool,
        migrated: bool,
        timeout: float,
        command: list[str],
        **options: Any,
    ) -> None:
        checks: list[tuple[str, Callable[[], str | None], str]] = []
        if database or migrated:
            checks.append(("the database", database_problem, "check DATABASE_URL"))
        if broker:
            if not settings.REDIS_URL:
                raise CommandError("--broker: there is no broker to wait for (REDIS_URL is empty)")
            checks.append(("the broker", _broker_problem, "check REDIS_URL"))
        if migrated:
            checks.append(("the migrations", _migrations_problem, "run manage.py migrate"))
        deadline = time.monotonic() + timeout if timeout > 0 else None
        for what, problem, hint in checks:
            self._wait(what, problem, hint, deadline, timeout)
        connections.close_all()
        if command:
            sys.stdout.flush()
            try:
                os.execvp(command[0], command)
            except OSError as exc:
                raise CommandError(f"Cannot run {command[0]}: {exc.strerror}") from None

    def _wait(
        self,
        what: str,
        problem: Callable[[], str | None],
        hint: str,
        deadline: float | None,
        timeout: float,
    ) -> None:
        """Until `problem` finds none; one line when waiting starts, and one each time the
        reason changes (a database that answers but refuses the password is not one that
        starts), but not for a count that goes down (the migrations left)."""
        told = None
        while (reason := problem()) is not None:
            if deadline is not None and time.monotonic() >= deadline:
                raise CommandError(f"Waited {timeout:g} s for {what}, in vain ({reason}): {hint}")
            if (kind := re.sub(r"\d+", "#", reason)) != told:
                self.stdout.write(f"Waiting for {what} ({reason})...")
                told = kind
            left = INTERVAL if deadline is None else deadline - time.monotonic()
            time.sleep(max(0.0, min(INTERVAL, left)))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:300]


def database_problem() -> str | None:
    connection = connections["default"]
    try:
        connection.ensure_connection()
        return None
    except DatabaseError as exc:
        connection.close()
        return _first_line(exc)


def _broker_problem() -> str | None:
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=3, socket_timeout=3)
    try:
        client.ping()
        return None
    except (redis.RedisError, OSError) as exc:
        return _first_line(exc)
    finally:
        client.close()


def _migrations_problem() -> str | None:
    try:
        executor = MigrationExecutor(connections["default"])
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except DatabaseError as exc:
        connections["default"].close()
        return _first_line(exc)
    if not plan:
        return None
    return f"{len(plan)} to apply" if len(plan) > 1 else "1 to apply"
