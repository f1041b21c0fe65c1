"""The database: written-out SQL for the hottest queries (sql.py) and the PostgreSQL backend."""
