"""What every app may use and that knows no app: domain errors, the clock, the database helpers
and the retry policy of tasks (retry.py)."""
