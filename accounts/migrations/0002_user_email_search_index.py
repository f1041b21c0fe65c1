"""An index on UPPER(email) for the admin's search of a million accounts by email address
(accounts.admin.AccountAdmin.indexed_search): Django's case-insensitive match is
UPPER(email) = UPPER(term). Built CONCURRENTLY on PostgreSQL, so sign-ins (which write
last_login) go on while it builds."""

from django.db import migrations

INDEX = "auth_user_email_upper_idx"


def create(apps, schema_editor):
    postgresql = schema_editor.connection.vendor == "postgresql"
    concurrently = "CONCURRENTLY " if postgresql else ""
    cast = "::text" if postgresql else ""
    if postgresql:
        # A concurrent build that failed or was cancelled leaves an invalid index of this name,
        # which IF NOT EXISTS would keep: build it again.
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(
                "SELECT 1 FROM pg_index WHERE indexrelid = to_regclass(%s) AND NOT indisvalid",
                [INDEX],
            )
            if cursor.fetchone():
                schema_editor.execute(f"DROP INDEX CONCURRENTLY {INDEX}")
    schema_editor.execute(
        f"CREATE INDEX {concurrently}IF NOT EXISTS {INDEX} ON auth_user (UPPER(email{cast}))"
    )


def drop(apps, schema_editor):
    schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [
        ("accounts", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [migrations.RunPython(create, drop, elidable=False)]
