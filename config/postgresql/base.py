"""Django's PostgreSQL backend, with a health check that costs no round trip, and cursors whose
parameters the server binds.

Django checks a kept connection before a request reuses it (CONN_HEALTH_CHECKS) by sending
`SELECT 1`: a round trip to the server on every request, half of what a GET one costs the
database. A server that ends a connection (a restart, a failover, `idle_session_timeout`,
`pg_terminate_backend`) sends its reason and closes the socket, and either makes the idle
connection's socket readable. So: nothing to read means the server has not closed it; anything
to read gets Django's own check, which tells a closed connection from a notice.
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
        poll = select.poll()
        poll.register(connection.fileno(), select.POLLIN)
        if not poll.poll(0):
            return True
        return bool(super().is_usable())

    def bound_cursor(self) -> Any:
        """A cursor whose parameters the server binds, answering in binary, wrapped as Django
        wraps its own (so that queries are logged and counted alike).

        psycopg prepares a query such a cursor runs `prepare_threshold` times (OPTIONS), so the
        server plans it once per connection. The ORM's cursors bind parameters on the client
        and are never prepared: a generic plan of one of its IN lists, made while a table was
        small, was seen to outlive the table's growth and make adds slower tenfold. Binary
        results are read in C, where Django's loader of timestamps is Python.
        """
        self.close_if_health_check_failed()
        self.ensure_connection()
        with self.wrap_database_errors:
            cursor = psycopg.Cursor(self.connection)
            cursor.format = psycopg.pq.Format.BINARY
            return self._prepare_cursor(cursor)  # type: ignore[attr-defined]
