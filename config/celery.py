"""The Celery app. Settings come from Django's, under the CELERY_ prefix."""

import os

from celery import Celery
from django.db import InterfaceError, OperationalError

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")

app = Celery("config")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Database errors worth another try, for every task: the database went away, a deadlock, a
# serialization failure.
TRANSIENT_DATABASE_ERRORS = (OperationalError, InterfaceError)
