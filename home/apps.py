from django.apps import AppConfig


class HomeConfig(AppConfig):
    """The home server (docs/self-hosting.md): `manage.py serve`, and the schedule it keeps in
    the web process where the full layout has Celery beat."""

    name = "home"
