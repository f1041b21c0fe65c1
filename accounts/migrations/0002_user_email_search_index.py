"""An index on UPPER(email) for the admin's search of a million accounts by email address
(accounts.admin.AccountAdmin.indexed_search): Django's case-insensitive match is
UPPER(email) = UPPER(term). Built CONCURRENTLY on PostgreSQL, so sign-ins (which write
last_login) go on while it builds."""

from django.db import migrations

from core.db.indexes import index_build

INDEX = "auth_user_email_upper_idx"


def create(apps, schema_editor):
    index_build(schema_editor, name=INDEX, table="auth_user", expression="UPPER(email{text})")


def drop(apps, schema_editor):
    schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [
        ("accounts", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [migrations.RunPython(create, drop, elidable=False)]
