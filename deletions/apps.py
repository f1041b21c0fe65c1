from django.apps import AppConfig


class DeletionsConfig(AppConfig):
    name = "deletions"
    default_auto_field = "django.db.models.BigAutoField"
