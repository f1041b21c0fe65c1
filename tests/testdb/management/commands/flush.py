"""`flush` as the tests' transactional tests (pytest-django's transactional_db, Django's
TransactionTestCase) run it after each test: every table emptied but the content types and the
permissions, which only migrations write, with DELETE rather than TRUNCATE on PostgreSQL.

Django's own flush TRUNCATEs every table, which makes PostgreSQL create new files for each table
and index: a fifth of a CPU-second after each of a few hundred tests, for tables holding a few
rows. Then it sends post_migrate to write the content types and permissions again. Deleting the
rows is enough, since Django's foreign keys are checked at the commit (deferred), and nothing
else in the tests depends on how a table was emptied.
"""

from typing import Any

from django.core.management.commands import flush
from django.db import connections

KEPT = frozenset({"django_content_type", "auth_permission"})


class Command(flush.Command):
    def handle(self, **options: Any) -> None:
        if options["interactive"]:
            super().handle(**options)  # a person's flush asks first, and empties everything
            return
        connection = connections[options["database"]]
        # Not options of the command line: TransactionTestCase passes them, as Django's reads them.
        reset_sequences = options.get("reset_sequences", True)
        allow_cascade = options.get("allow_cascade", False)
        tables = [
            table
            for table in connection.introspection.django_table_names(
                only_existing=True, include_views=False
            )
            if table not in KEPT
        ]
        if connection.vendor == "postgresql" and not reset_sequences:
            quote = connection.ops.quote_name
            statements = [f"DELETE FROM {quote(table)}" for table in tables]
        else:
            statements = connection.ops.sql_flush(
                self.style,
                tables,
                reset_sequences=reset_sequences,
                allow_cascade=allow_cascade,
            )
        connection.ops.execute_sql_flush(statements)
