"""Written-out SQL for the hottest reads and writes, on PostgreSQL and on SQLite alike.

Building and compiling the ORM's queries, model instances, and bulk_create (a model instance
per row, every value prepared, every parameter quoted into the text of the statement) were large
shares of a GET, a list and an add (bench/README.md, "core.db.sql"). These helpers do
what the ORM would, for the few queries that need it: values go in and come out converted as
the fields' own, and on PostgreSQL a list of rows is a few array parameters the server binds.
"""

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from django.db import connection
from django.db.models import CharField, Field, Model
from django.db.models.expressions import Col


class AsText(NamedTuple):
    """A UUID field's column selected as `CAST(column AS text)`, read as the UUID's canonical
    string: PostgreSQL's text is that already; SQLite's (Django's 32 hex digits) is made so.

    For what is only shown: loading a UUID from binary only to print it again is wasted work
    (bench/README.md, "core.db.sql.AsText").
    """

    field: Field

    @staticmethod
    def sql(column: str) -> str:
        return f"CAST({column} AS text)"


def _as_string(value: Any, expression: Any, connection: Any) -> Any:
    return None if value is None else str(value)


class Columns:
    """The fields whose values a written-out query selects, in order (None: taken as it comes).

    Reading them converts each value as the ORM would: PostgreSQL's need nothing, SQLite's
    UUIDs and timestamps are text.
    """

    def __init__(self, *fields: Field | AsText | None):
        self.fields = fields
        self._converters: dict[str, list[tuple[int, Any, Col]]] = {}  # per database vendor

    def converters(self) -> list[tuple[int, Any, Col]]:
        found = self._converters.get(connection.vendor)
        if found is None:
            found = self._converters[connection.vendor] = [
                (i, convert, _field_of(column).cached_col)
                for i, column in enumerate(self.fields)
                if column is not None
                for convert in _converters(column)
            ]
        return found

    def convert(self, rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        converters = self.converters()
        if not converters:
            return rows
        converted = []
        for row in rows:
            values = list(row)
            for i, convert, column in converters:
                values[i] = convert(values[i], column, connection)
            converted.append(tuple(values))
        return converted


def _field_of(column: Field | AsText) -> Field:
    return column.field if isinstance(column, AsText) else column


def _converters(column: Field | AsText) -> list[Any]:
    if isinstance(column, AsText) and connection.vendor == "postgresql":
        return []
    field = _field_of(column)
    found = connection.ops.get_db_converters(field.cached_col) + field.get_db_converters(connection)
    return [*found, _as_string] if isinstance(column, AsText) else found


def _cursor(*, prepare: bool = False) -> Any:
    bound = getattr(connection, "bound_cursor", None)  # PostgreSQL's: binary, maybe prepared
    return connection.cursor() if bound is None else bound(prepare=prepare)


def fetch(
    sql: str, params: Sequence[Any], columns: Columns, *, prepare: bool = False
) -> list[tuple[Any, ...]]:
    """The rows of written-out SQL, as `columns`; `prepare` only a lookup by a unique key, whose
    plan does not depend on its values (core.db.postgresql)."""
    with _cursor(prepare=prepare) as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    return columns.convert(rows)


def param(field: Field, value: Any) -> Any:
    """`value` as a parameter for `field`'s column."""
    return field.get_db_prep_value(value, connection)


def _params(field: Field, values: Sequence[Any]) -> Sequence[Any]:
    # psycopg sends Python's UUIDs, timestamps, strings and numbers as they are, and Django's
    # PostgreSQL backend prepares them by handing them on: preparing each of a long list would
    # cost more than sending it. Other databases need Django's conversions (UUIDs as hex, ...).
    if connection.vendor == "postgresql":
        return values
    return [field.get_db_prep_value(value, connection) for value in values]


def _cast_type(field: Field) -> str:
    """The PostgreSQL type a parameter for `field` is cast to: strings to text, because an
    explicit cast to varchar(n) would cut a longer one where storing it must fail."""
    return "text" if isinstance(field, CharField) else str(field.db_type(connection))


def _json(values: Any) -> str:
    return json.dumps(values, ensure_ascii=False)


def by_key(
    model: type[Model],
    name: str,
    values: Sequence[Any],
    *,
    where: str,
    params: Sequence[Any],
    alias: str,
) -> tuple[str, list[Any]]:
    """A FROM item named `alias`: the rows of `model` that meet `where` (SQL over its columns,
    with `params`) and whose field `name` is one of `values`; and the parameters of the whole
    item. `where` and `name` together must be a unique key: at most one row per value.

    On PostgreSQL each value is looked up in the key's index (a lateral subquery per value,
    whose LIMIT keeps the planner from making it a join): as a join, or as `= ANY(array)`, it was
    planned on statistics from before a user's last large add, read every row of the user's, and
    cost more the more subscriptions the user had. SQLite looks each value up by itself. The
    statement's text does not grow with the list.
    """
    field, column = _model_column(model, name)
    table = connection.ops.quote_name(model._meta.db_table)
    if connection.vendor == "postgresql":
        item = (
            f"unnest(%b::{_cast_type(field)}[]) AS {alias}_key(value) CROSS JOIN LATERAL"
            f" (SELECT * FROM {table} WHERE {where} AND {column} = {alias}_key.value LIMIT 1)"
            f" AS {alias}"
        )
        return item, [list(values), *params]
    item = (
        f"(SELECT * FROM {table} WHERE {where}"
        f" AND {column} IN (SELECT value FROM json_each(%s))) AS {alias}"
    )
    return item, [*params, _json(_params(field, values))]


def _model_column(model: type[Model], name: str) -> tuple[Field, str]:
    """The field `name` of `model`, and its column's quoted name."""
    field = model._meta.get_field(name)
    if not isinstance(field, Field) or not field.column:
        raise TypeError(f"{name} is not a column of {model.__name__}")
    return field, connection.ops.quote_name(field.column)


def insert_statement(
    model: type[Model],
    columns: Mapping[str, Sequence[Any]],
    *,
    same: Mapping[str, Any],
    computed: Mapping[str, str] | None = None,
    where: str | None = None,
    where_params: Sequence[Any] = (),
    ignore_conflicts: bool = False,
) -> tuple[str, list[Any]]:
    """insert()'s statement and parameters, for a caller that runs it within a statement of
    its own (a data-modifying WITH); `computed`: columns given by an SQL expression, the same
    for every row."""
    query = _insert_text(
        model,
        tuple(same),
        tuple(columns),
        tuple((computed or {}).items()),
        where,
        ignore_conflicts,
        connection.vendor,
    )
    params = [param(_model_column(model, name)[0], value) for name, value in same.items()]
    varying = [(_model_column(model, name)[0], values) for name, values in columns.items()]
    if connection.vendor == "postgresql":
        params += [list(_params(field, values)) for field, values in varying]
    else:
        rows = zip(*(_params(field, values) for field, values in varying), strict=True)
        params.append(_json(list(rows)))
    return query, [*params, *where_params]


@functools.lru_cache(maxsize=256)
def _insert_text(
    model: type[Model],
    same: tuple[str, ...],
    varying: tuple[str, ...],
    computed: tuple[tuple[str, str], ...],
    where: str | None,
    ignore_conflicts: bool,
    vendor: str,
) -> str:
    """insert_statement's text, which depends only on the names of its columns: an upload of
    one play builds it once per process, not once per request."""
    constants = [_model_column(model, name) for name in same]
    changing = [_model_column(model, name) for name in varying]
    expressions = [(_model_column(model, name)[1], text) for name, text in computed]
    names = ", ".join(
        [column for _, column in [*constants, *changing]] + [column for column, _ in expressions]
    )
    if vendor == "postgresql":
        selected = [f"%s::{_cast_type(field)}" for field, _ in constants]
        selected += [f"u.c{i}" for i in range(len(changing))]
        arrays = ", ".join(f"%b::{_cast_type(field)}[]" for field, _ in changing)
        aliases = ", ".join(f"c{i}" for i in range(len(changing)))
        source = f"unnest({arrays}) AS u({aliases})"
    else:
        selected = ["%s"] * len(constants)
        selected += [f"json_extract(value, '$[{i}]')" for i in range(len(changing))]
        source = "json_each(%s)"
    selected += [text for _, text in expressions]
    table = connection.ops.quote_name(model._meta.db_table)
    query = f"INSERT INTO {table} ({names}) SELECT {', '.join(selected)} FROM {source}"
    if where is not None or ignore_conflicts:
        # SQLite would read ON as the start of a join's condition without the WHERE.
        query += f" WHERE {where or 'true'}"
    if ignore_conflicts:
        query += " ON CONFLICT DO NOTHING"
    return query


def insert(
    model: type[Model],
    columns: Mapping[str, Sequence[Any]],
    *,
    same: Mapping[str, Any],
    returning: Sequence[str] = (),
    where: str | None = None,
    where_params: Sequence[Any] = (),
    ignore_conflicts: bool = False,
    prepare: bool = False,
) -> list[tuple[Any, ...]]:
    """Insert one row per position of the lists in `columns` (field name: values), every row
    with the values of `same` too, in one statement; return `returning`'s fields of each row,
    in no particular order. `where`: an SQL condition (with `where_params`) the rows are
    inserted only under, none when it does not hold. `ignore_conflicts`: a row that would break
    a unique constraint is left out (and not returned), the others are inserted.

    Values must be of their fields' Python types: they are converted only as far as the
    database needs (not validated). `prepare`: the statement is the same whatever the rows (on
    PostgreSQL, arrays of any length), so a connection plans it once (core.db.postgresql).
    """
    if not columns:
        raise ValueError("insert() needs at least one column that varies")
    if not len(next(iter(columns.values()))):
        return []
    query, params = insert_statement(
        model,
        columns,
        same=same,
        where=where,
        where_params=where_params,
        ignore_conflicts=ignore_conflicts,
    )
    if not returning:
        with _cursor(prepare=prepare) as cursor:
            cursor.execute(query, params)
        return []
    wanted = [_model_column(model, name) for name in returning]
    query += " RETURNING " + ", ".join(column for _, column in wanted)
    return fetch(query, params, Columns(*(field for field, _ in wanted)), prepare=prepare)
