"""Indexes a migration builds on a table that is written all the time: CONCURRENTLY on
PostgreSQL, so writes go on while it builds (a plain CREATE INDEX on SQLite, the home server's,
which has no such table to wait on)."""

from typing import Any


def index_build(
    schema_editor: Any, *, name: str, table: str, expression: str, unique: bool = False
) -> None:
    """CREATE [UNIQUE] INDEX `name` ON `table` (`expression`), once; `{text}` in `expression`
    is PostgreSQL's `::text` cast (nothing on SQLite), for an UPPER() of a varchar column.

    A concurrent build that failed or was cancelled leaves an invalid index of this name, which
    IF NOT EXISTS would keep: it is dropped and built again. The migration must be `atomic =
    False`: CREATE INDEX CONCURRENTLY cannot run in a transaction.
    """
    postgresql = schema_editor.connection.vendor == "postgresql"
    if postgresql:
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(
                "SELECT 1 FROM pg_index WHERE indexrelid = to_regclass(%s) AND NOT indisvalid",
                [name],
            )
            if cursor.fetchone():
                schema_editor.execute(f"DROP INDEX CONCURRENTLY {name}")
    kind = "UNIQUE INDEX" if unique else "INDEX"
    concurrently = "CONCURRENTLY " if postgresql else ""
    columns = expression.format(text="::text" if postgresql else "")
    schema_editor.execute(
        f"CREATE {kind} {concurrently}IF NOT EXISTS {name} ON {table} ({columns})"
    )
