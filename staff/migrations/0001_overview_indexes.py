"""The indexes the admin's overview reads its figures by (staff.selectors), on tables of the apps
below it: who was active in the last 30 days, and how many synced on each of the last 14, are read
from the rows of those days alone, not from every account's (docs/operations.md, "The admin").

- auth_user (last_login): sign-ins;
- gpodder_device (last_used): a device's requests, written at most once a minute per device;
- subscriptions_subscription (subscription_changed): subscriptions added, changed and deleted;
- episodes_episodeaction (received): its index by user (user, received, id) would be read whole
  for a day across users, and a BRIN index was passed over for it by the planner. Each upload
  adds its entries at the index's right end, where `received` grows.

Each holds the account's id too: the counts are then read from the index alone.

They are kept with the overview, the only reader of them. Built CONCURRENTLY on PostgreSQL, so
syncs and sign-ins go on while they build."""

from django.db import migrations

from core.db.indexes import index_build

# name, table, columns
INDEXES = [
    ("auth_user_last_login_idx", "auth_user", "last_login, id"),
    ("device_last_used_idx", "gpodder_device", "last_used, user_id"),
    ("subscription_changed_idx", "subscriptions_subscription", "subscription_changed, user_id"),
    ("episodeaction_received_day_idx", "episodes_episodeaction", "received, user_id"),
]


def create(apps, schema_editor):
    for name, table, columns in INDEXES:
        index_build(schema_editor, name=name, table=table, expression=columns)


def drop(apps, schema_editor):
    for name, _, _ in INDEXES:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [
        ("accounts", "0003_username_case_unique"),
        ("gpodder", "0002_device_pulled_up_to"),
        ("subscriptions", "0004_history_user_indexed_by_unique_constraints"),
        ("episodes", "0004_fill_episode_keys"),
    ]

    operations = [migrations.RunPython(create, drop, elidable=False)]
