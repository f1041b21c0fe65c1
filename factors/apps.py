from django.apps import AppConfig


class FactorsConfig(AppConfig):
    name = "factors"
    default_auto_field = "django.db.models.BigAutoField"
