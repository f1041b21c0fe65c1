"""The device sync events' migration (gpodder 0003) over devices the previous schema stored: they
are noted from their next sync on, and undoing it drops the table, their devices intact. Run on
PostgreSQL and, in the home slice, on SQLite."""

from django.db import connection

from core.db import later
from gpodder import diagnostics
from gpodder.models import DeviceSyncEvent
from tests.helpers import migrate

BEFORE = [("gpodder", "0002_device_pulled_up_to")]
AFTER = [("gpodder", "0003_device_sync_events")]


def tables() -> set[str]:
    with connection.cursor() as cursor:
        return set(connection.introspection.table_names(cursor))


def test_devices_stored_before_are_noted_once_it_runs_and_undoing_drops_it(back_to_latest):
    old = migrate(BEFORE)
    user = old.get_model("auth", "User").objects.create(username="migrated", is_active=True)
    device = old.get_model("gpodder", "Device").objects.create(
        user=user, device_id="phone", created="2026-01-01T00:00Z", last_used="2026-01-01T00:00Z"
    )
    assert DeviceSyncEvent._meta.db_table not in tables()

    migrate(AFTER)
    assert DeviceSyncEvent._meta.db_table in tables()
    note = diagnostics.subscriptions_pulled(added=1, removed=0)
    diagnostics.sync_note_record(
        user_id=user.pk,
        protocol="gpodder",
        agent="gPodder/3.11.4",
        session_key=None,
        notes={"phone": note},
    )
    later.flush()
    [event] = DeviceSyncEvent.objects.all()
    assert (event.device_id, event.slot, event.seq, event.count) == (device.pk, 0, 0, 1)

    undone = migrate(BEFORE)
    assert DeviceSyncEvent._meta.db_table not in tables()
    assert undone.get_model("gpodder", "Device").objects.get().device_id == "phone"
