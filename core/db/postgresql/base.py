"""Django's PostgreSQL backend, with a health check that costs no round trip, and cursors whose
parameters the server binds.

Django checks a kept connection before a request reuses it (CONN_HEALTH_CHECKS) by sending `SELECT
1`: a round trip to the server on every request (bench/README.md,
"core.db.postgresql.DatabaseWrapper.is_usable"). A server that ends a connection (a restart,
`idle_session_timeout`, `pg_terminate_backend`, a failover that closes its connections) sends its
reason and closes the socket, which makes the idle connection's socket readable. So: an idle
connection with nothing to read is taken as usable; anything to read gets Django's own check, which
tells a closed connection from a notice. A server that vanishes without a word (its host powered
off) is found by the request's own query instead, as it would be between the check and the query
anyway.
"""

import select
from typing import Any

import psycopg
from django.db.backends.postgresql import base


class DatabaseWrapper(base.DatabaseWrapper):
    def is_usable(self) -> bool:
        connection: Any = self.connection
        if connection is None or connection.closed:
            return False
        try:
            idle = (
                connection.info.status == psycopg.pq.ConnStatus.OK
                and connection.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
            )
            if idle:
                poll = select.poll()
                poll.register(connection.fileno(), select.POLLIN)
                if not poll.poll(0):
                    return True
        except (OSError, psycopg.Error):
            return False
        return bool(super().is_usable())

    def bound_cursor(self, *, prepare: bool) -> Any:
        """A cursor whose parameters the server binds, answering in binary, wrapped as Django
        wraps its own (so that queries are logged and counted alike).

        With `prepare`, psycopg prepares a query the cursor runs `prepare_threshold` times
        (OPTIONS), and the server may then keep one generic plan for it: right for a lookup by a
        unique key, whatever its values, whose planning was most of a GET's database time. Not for a
        query whose best plan depends on its values: the list's generic plan is worse for a recent
        `since`, and the ORM's IN lists had a plan made while a table was small outlive its growth
        (bench/README.md, "core.db.postgresql.DatabaseWrapper.bound_cursor"). The ORM's cursors bind
        on the client and are never prepared. Binary results are read in C; Django's loader of
        timestamps is Python.
        """
        self.close_if_health_check_failed()
        self.ensure_connection()
        with self.wrap_database_errors:
            cursor = (psycopg.Cursor if prepare else _UnpreparedCursor)(self.connection)
            cursor.format = psycopg.pq.Format.BINARY
            return self._prepare_cursor(cursor)  # type: ignore[attr-defined]


class _UnpreparedCursor(psycopg.Cursor[Any]):
    def execute(self, query: Any, params: Any = None, **options: Any) -> Any:
        return super().execute(query, params, **{**options, "prepare": False})
