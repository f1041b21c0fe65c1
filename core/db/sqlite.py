"""What a process on SQLite keeps out (bench/HISTORY.md, "Footprint")."""

import sys

# django.contrib.postgres's fields import psycopg: 8 MB of every process. DRF's compat module
# imports them whenever it can, to map PostgreSQL's fields; on SQLite no model has one.
POSTGRES_FIELDS = "django.contrib.postgres.fields"


def postgres_fields_refused() -> None:
    """Make importing POSTGRES_FIELDS fail as a package that is not installed does, which DRF
    takes as "no PostgreSQL fields". Called by the settings before any app is loaded."""
    sys.modules.setdefault(POSTGRES_FIELDS, None)  # type: ignore[arg-type]
