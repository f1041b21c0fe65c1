"""core.db.indexes.index_build, what the migrations build their big tables' indexes with."""

import pytest
from django.db import connection

from core.db.indexes import index_build

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db(transaction=True)]


def valid(name: str) -> bool | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)", [name])
        row = cursor.fetchone()
    return None if row is None else bool(row[0])


def test_an_index_a_failed_concurrent_build_left_invalid_is_built_again() -> None:
    with connection.schema_editor(atomic=False) as editor:
        index_build(
            editor, name="test_upper_email_idx", table="auth_user", expression="UPPER(email{text})"
        )
        assert valid("test_upper_email_idx") is True
        with connection.cursor() as cursor:  # as a cancelled CREATE INDEX CONCURRENTLY leaves it
            cursor.execute(
                "UPDATE pg_index SET indisvalid = false"
                " WHERE indexrelid = to_regclass('test_upper_email_idx')"
            )
        assert valid("test_upper_email_idx") is False
        index_build(
            editor, name="test_upper_email_idx", table="auth_user", expression="UPPER(email{text})"
        )
        assert valid("test_upper_email_idx") is True
        editor.execute("DROP INDEX test_upper_email_idx")
