"""`manage.py wait_for` (docs/containers.md): what a container of the full layout runs before its
process, waiting for the database, the broker and the migrations, one line each while it waits,
then becoming the process."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from home.management.commands import wait_for
from tests.servers import free_port


@pytest.fixture
def execs(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The commands wait_for would have become."""
    ran: list[list[str]] = []
    monkeypatch.setattr(wait_for.os, "execvp", lambda file, args: ran.append(list(args)))
    monkeypatch.setattr(wait_for, "INTERVAL", 0.01)
    return ran


@pytest.mark.django_db
def test_a_migrated_database_that_answers_is_not_waited_for(execs):
    out = StringIO()
    call_command(
        "wait_for", "--database", "--migrated", "--", "celery", "-A", "config", "beat", stdout=out
    )
    assert out.getvalue() == ""
    assert execs == [["celery", "-A", "config", "beat"]]


def test_one_line_while_waiting_and_one_more_when_the_reason_changes(monkeypatch, execs):
    reasons = iter(["connection refused"] * 3 + ["password authentication failed"] * 2 + [None])
    monkeypatch.setattr(wait_for, "database_problem", lambda: next(reasons))
    out = StringIO()
    call_command("wait_for", "--database", "--timeout=0", "--", "gunicorn", stdout=out)
    assert out.getvalue().splitlines() == [
        "Waiting for the database (connection refused)...",
        "Waiting for the database (password authentication failed)...",
    ]
    assert execs == [["gunicorn"]]


def test_the_migrations_left_going_down_are_one_line(monkeypatch, execs):
    reasons = iter(["49 to apply", "31 to apply", "1 to apply", None])
    monkeypatch.setattr(wait_for, "database_problem", lambda: None)
    monkeypatch.setattr(wait_for, "_migrations_problem", lambda: next(reasons))
    out = StringIO()
    call_command("wait_for", "--migrated", "--", "gunicorn", stdout=out)
    assert out.getvalue().splitlines() == ["Waiting for the migrations (49 to apply)..."]


def test_a_broker_that_never_answers_fails_after_the_timeout_saying_what_to_check(settings, execs):
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    out = StringIO()
    with pytest.raises(CommandError, match=r"Waited 0.3 s for the broker, in vain \(.*REDIS_URL"):
        call_command("wait_for", "--broker", "--timeout=0.3", "--", "celery", stdout=out)
    assert out.getvalue().count("Waiting for the broker") == 1
    assert execs == []


def test_no_broker_to_wait_for_is_a_mistake(settings, execs):
    settings.REDIS_URL = ""
    with pytest.raises(CommandError, match="REDIS_URL is empty"):
        call_command("wait_for", "--broker")


def test_a_command_that_is_not_there_is_named(settings):
    with pytest.raises(CommandError, match="Cannot run no-such-command-here"):
        call_command("wait_for", "--", "no-such-command-here")
