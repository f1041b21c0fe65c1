"""The accounts' activity from what was recorded before it was kept (inactivity migration 0001):
the latest of a sign-in, a device's request and a subscription's change; no row for an account
not used since it joined, which the policy counts from its joining."""

from datetime import UTC, datetime

from tests.helpers import migrate

# Before the activity was kept (which unapplies the inactivity app's migration too), with the
# tables it reads from.
BEFORE = [
    ("accounts", "0007_awaiting_confirmation"),
    ("gpodder", "0003_device_sync_events"),
    ("subscriptions", "0004_history_user_indexed_by_unique_constraints"),
]
AFTER = [("inactivity", "0001_activity_from_before")]


def at(day: int) -> datetime:
    return datetime(2024, 1, day, 12, tzinfo=UTC)


def test_each_account_gets_the_latest_of_what_it_did(back_to_latest):
    old = migrate(BEFORE)
    users = old.get_model("auth", "User").objects
    device = old.get_model("gpodder", "Device").objects
    subscription = old.get_model("subscriptions", "Subscription").objects
    signed_in = users.create(username="signed-in", date_joined=at(1), last_login=at(5))
    synced = users.create(username="synced", date_joined=at(1), last_login=at(2))
    device.create(user=synced, device_id="phone", created=at(1), last_used=at(9))
    device.create(user=synced, device_id="old", created=at(1), last_used=at(3))
    changed = users.create(username="changed", date_joined=at(1))
    subscription.create(
        user=changed,
        feed_url="https://feeds.example/a.xml",
        guid="00000000-0000-0000-0000-000000000001",
        subscription_changed=at(7),
        created=at(7),
    )
    never = users.create(username="never", date_joined=at(1))

    new = migrate(AFTER)

    seen = dict(new.get_model("accounts", "Activity").objects.values_list("user_id", "seen"))
    assert seen == {signed_in.pk: at(5), synced.pk: at(9), changed.pk: at(7)}
    assert never.pk not in seen
