"""Usernames unique whatever their case on SQLite (the embedded default, `make run`), in a process
of its own on a fresh SQLite file: the index folds case as the services' check (`LIKE`) does,
ASCII letters only, and the migration stops on accounts that differ only in case."""

from pathlib import Path

from tests.sqlite import run_on_sqlite

SCRIPT = r"""
import django
django.setup()
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

def migrate(target):
    executor = MigrationExecutor(connection)
    executor.migrate([("accounts", target)])
    return executor.loader.project_state([("accounts", target)]).apps

users = migrate("0002_user_email_search_index").get_model("auth", "User").objects
quinn = users.create(username="quinn")
raced = users.create(username="QUINN")
try:
    migrate("0003_username_case_unique")
except CommandError as exc:
    assert f"{raced.pk}: 'QUINN'" in str(exc), exc
else:
    raise AssertionError("the migration went through with case duplicates")
raced.delete()
call_command("migrate", verbosity=0)

from django.contrib.auth import get_user_model
from accounts.services import user_register
from core.exceptions import InvalidInput

User = get_user_model()
# Non-ASCII letters are told apart by both; `_`, LIKE's wildcard, is only itself to both.
pairs = [("quinn", "Quinn"), ("zoë", "ZOË"), ("Ærø", "ærø"), ("a_b", "A_B"), ("a_c", "AXC")]
for name, other in pairs:
    User.objects.get_or_create(username=name)
    matched = User.objects.filter(username__iexact=other).exists()
    try:
        with transaction.atomic():
            User.objects.create(username=other)
    except IntegrityError:
        refused = True
    else:
        refused = False
    assert matched == refused, (name, other, matched, refused)

try:
    user_register(username="QUINN", password="a long and unusual passphrase 7")
except InvalidInput as exc:
    assert exc.message.endswith(": That username is already taken"), exc.message
else:
    raise AssertionError("registered a case variant")
print("ok")
"""


def test_usernames_unique_whatever_their_case_on_sqlite(tmp_path: Path) -> None:
    run_on_sqlite(SCRIPT, tmp_path)
