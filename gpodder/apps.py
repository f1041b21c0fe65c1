from django.apps import AppConfig


class GpodderConfig(AppConfig):
    name = "gpodder"
    verbose_name = "gpodder.net API"
    default_auto_field = "django.db.models.BigAutoField"
