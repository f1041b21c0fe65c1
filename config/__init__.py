"""Project configuration: settings, URLs, the Celery app and the API plumbing the apps share."""

from .celery import app as celery_app

__all__ = ["celery_app"]
