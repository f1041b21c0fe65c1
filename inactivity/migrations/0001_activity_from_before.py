"""Each account's activity (accounts.Activity) from what was recorded before it was kept: its
last sign-in, its devices' last request, and its subscriptions' last change, the latest of
them. An account with none of them gets no row: it has not been used since it joined. One
statement, whatever the number of accounts."""

from django.conf import settings
from django.db import migrations


def seed(apps, schema_editor):
    table = {
        name: apps.get_model(label)._meta.db_table
        for name, label in (
            ("activity", "accounts.Activity"),
            ("user", settings.AUTH_USER_MODEL),
            ("device", "gpodder.Device"),
            ("subscription", "subscriptions.Subscription"),
        )
    }
    # PostgreSQL's GREATEST and SQLite's many-argument MAX, each part never NULL.
    greatest = "GREATEST" if schema_editor.connection.vendor == "postgresql" else "MAX"
    schema_editor.execute(
        f"INSERT INTO {table['activity']} (user_id, seen)"
        f" SELECT u.id, {greatest}(COALESCE(u.last_login, u.date_joined),"
        " COALESCE(d.latest, u.date_joined), COALESCE(s.latest, u.date_joined))"
        f" FROM {table['user']} u"
        f" LEFT JOIN (SELECT user_id, MAX(last_used) AS latest FROM {table['device']}"
        " GROUP BY user_id) d ON d.user_id = u.id"
        f" LEFT JOIN (SELECT user_id, MAX(subscription_changed) AS latest"
        f" FROM {table['subscription']} GROUP BY user_id) s ON s.user_id = u.id"
        " WHERE u.last_login IS NOT NULL OR d.latest IS NOT NULL OR s.latest IS NOT NULL"
    )


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0008_activity"),
        ("gpodder", "0003_device_sync_events"),
        ("subscriptions", "0004_history_user_indexed_by_unique_constraints"),
    ]

    operations = [migrations.RunPython(seed, migrations.RunPython.noop, elidable=False)]
