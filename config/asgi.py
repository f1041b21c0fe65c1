"""ASGI entry point."""

import os

from django.core.asgi import get_asgi_application

from core import warm

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")

application = get_asgi_application()
warm.up()
