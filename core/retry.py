"""How a Celery task that writes survives transient database errors: the retry policy every
app's tasks share."""

from typing import Any

from django.db import InterfaceError, OperationalError

# Database errors worth another try: the database went away, a deadlock, a serialization failure.
TRANSIENT_DATABASE_ERRORS = (OperationalError, InterfaceError)

# Retried, backing off up to a minute (docs/api.md, "Deletion"); each task adds its queue and its
# number of retries. Every task is acknowledged only once done, so a message of a worker that
# dies is delivered again: the settings' CELERY_TASK_ACKS_LATE and
# CELERY_TASK_REJECT_ON_WORKER_LOST.
RELIABLE: dict[str, Any] = {
    "autoretry_for": TRANSIENT_DATABASE_ERRORS,
    "retry_backoff": 1,
    "retry_backoff_max": 60,
    "retry_jitter": True,
}
