"""The Celery app. Settings come from Django's, under the CELERY_ prefix."""

import os
from typing import Any

from celery import Celery
from django.db import InterfaceError, OperationalError

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")

app = Celery("config")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Database errors worth another try, for every task: the database went away, a deadlock, a
# serialization failure.
TRANSIENT_DATABASE_ERRORS = (OperationalError, InterfaceError)

# How a task that writes survives transient database errors (product.md section 10): retried,
# backing off up to a minute. Each task adds its queue and its number of retries. (Every task is
# acknowledged only once done, so a message of a worker that dies is delivered again: the
# settings' CELERY_TASK_ACKS_LATE and CELERY_TASK_REJECT_ON_WORKER_LOST.)
RELIABLE: dict[str, Any] = {
    "autoretry_for": TRANSIENT_DATABASE_ERRORS,
    "retry_backoff": 1,
    "retry_backoff_max": 60,
    "retry_jitter": True,
}
