"""WSGI entry point: `gunicorn config.wsgi`."""

import os

from django.core.wsgi import get_wsgi_application

from core import warm

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")

application = get_wsgi_application()
warm.up()
