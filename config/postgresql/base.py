"""Django's PostgreSQL backend, with a health check that costs no round trip.

Django checks a kept connection before a request reuses it (CONN_HEALTH_CHECKS) by sending
`SELECT 1`: a round trip to the server on every request, half of what a GET one costs the
database. A server that ends a connection (a restart, a failover, `idle_session_timeout`,
`pg_terminate_backend`) sends its reason and closes the socket, and either makes the idle
connection's socket readable. So: nothing to read means the server has not closed it; anything
to read gets Django's own check, which tells a closed connection from a notice.
"""

import select
from typing import Any

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
