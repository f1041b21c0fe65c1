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

# How every task of the project survives (product.md section 10): acknowledged only once done,
# so a message of a worker that dies is delivered again; retried on transient database errors,
# backing off up to a minute. Each task adds its queue and its number of retries.
RELIABLE: dict[str, Any] = {
    "acks_late": True,
    "reject_on_worker_lost": True,
    "autoretry_for": TRANSIENT_DATABASE_ERRORS,
    "retry_backoff": 1,
    "retry_backoff_max": 60,
    "retry_jitter": True,
}
