"""Configuration only: settings, URLs, the Celery app, gunicorn, WSGI and ASGI."""

from .celery import app as celery_app

__all__ = ["celery_app"]
