"""The migration that makes usernames unique whatever their case (accounts 0003), on an instance
whose registrations raced before it (docs/operations.md, "Usernames that differ only in case"):
it stops, naming the accounts and what to do, and changes nothing; once the operator has kept
one of each, it makes the index."""

import pytest
from django.core.management.base import CommandError
from django.db import IntegrityError, connection, transaction

from tests.helpers import migrate

BEFORE = [("accounts", "0002_user_email_search_index")]
AFTER = [("accounts", "0003_username_case_unique")]
INDEX = "auth_user_username_upper_uniq"


def index_exists() -> bool:
    with connection.cursor() as cursor:
        return INDEX in connection.introspection.get_constraints(cursor, "auth_user")


def test_case_duplicates_stop_it_until_the_operator_keeps_one_of_each(back_to_latest):
    old = migrate(BEFORE)
    users = old.get_model("auth", "User").objects
    kept = users.create(username="quinn")
    raced = [users.create(username=name) for name in ("Quinn", "QUINN")]
    other = users.create(username="robin")

    with pytest.raises(CommandError) as refused:
        migrate(AFTER)

    told = str(refused.value)
    for user in [kept, *raced]:
        assert f"{user.pk}: {user.username!r}" in told
    assert "robin" not in told
    assert "Keep one of each" in told
    assert "docs/operations.md" in told
    assert not index_exists()
    assert sorted(users.values_list("username", flat=True)) == ["QUINN", "Quinn", "quinn", "robin"]

    # Once only one of each is left, in whatever case, it goes through.
    users.filter(pk=raced[0].pk).update(username=f"quinn-{raced[0].pk}")
    users.filter(pk=raced[1].pk).delete()
    new = migrate(AFTER)
    assert index_exists()
    users = new.get_model("auth", "User").objects
    with pytest.raises(IntegrityError), transaction.atomic():
        users.create(username="ROBIN")
    assert users.get(pk=other.pk).username == "robin"


def test_without_duplicates_it_makes_the_index_and_undoing_drops_it(back_to_latest):
    old = migrate(BEFORE)
    old.get_model("auth", "User").objects.create(username="quinn")
    assert not index_exists()
    migrate(AFTER)
    assert index_exists()
    migrate(BEFORE)
    assert not index_exists()
