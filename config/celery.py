"""The Celery app. Settings come from Django's, under the CELERY_ prefix; each app's tasks.py is
found by autodiscover_tasks()."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")

app = Celery("config")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
