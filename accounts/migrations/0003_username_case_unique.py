"""Usernames unique whatever their case, in the database: a unique index on UPPER(username), the
expression Django's case-insensitive match (username__iexact, which registration checks) compares
on PostgreSQL, and which folds case as SQLite's LIKE does there (ASCII letters). Two
registrations at once can then make one account, not two differing only in case.

Accounts that differ only in case, which that race made before this index, stop the migration,
naming them: the operator keeps one of each (docs/operations.md, "Usernames that differ only in
case"). Built CONCURRENTLY on PostgreSQL, so sign-ins go on while it builds."""

from django.core.management.base import CommandError
from django.db import migrations
from django.db.models import Count
from django.db.models.functions import Upper

from core.db.indexes import index_build

INDEX = "auth_user_username_upper_uniq"


def case_duplicates(apps):
    """The accounts whose username another has in another case, by folded name, oldest first."""
    users = apps.get_model("auth", "User").objects.annotate(folded=Upper("username"))
    folded = users.values("folded").annotate(n=Count("pk")).filter(n__gt=1).values("folded")
    return list(
        users.filter(folded__in=folded)
        .order_by("folded", "pk")
        .values_list("pk", "username", "date_joined", "last_login")
    )


def refused(found):
    accounts = "\n".join(
        f"  {pk}: {username!r}, joined {joined:%Y-%m-%d %H:%M}, last signed in "
        + (f"{last:%Y-%m-%d %H:%M}" if last else "never")
        for pk, username, joined, last in found
    )
    return (
        "Usernames must be unique whatever their case, and these accounts (id: username) have "
        f"the same one in different cases:\n{accounts}\n"
        "Keep one of each: rename the others (the admin's user page, on the release still "
        "running) or delete them, and tell their people; then run migrate again. See "
        'docs/operations.md, "Usernames that differ only in case".'
    )


def create(apps, schema_editor):
    # Named before the build: a duplicate registered during a concurrent build fails it (and
    # index_build drops the invalid index it leaves when migrate runs again).
    found = case_duplicates(apps)
    if found:
        raise CommandError(refused(found))
    index_build(
        schema_editor,
        name=INDEX,
        table="auth_user",
        expression="UPPER(username{text})",
        unique=True,
    )


def drop(apps, schema_editor):
    schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [("accounts", "0002_user_email_search_index")]

    operations = [migrations.RunPython(create, drop, elidable=False)]
