from django.apps import AppConfig


class InactivityConfig(AppConfig):
    name = "inactivity"
    default_auto_field = "django.db.models.BigAutoField"
