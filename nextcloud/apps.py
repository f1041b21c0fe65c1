from django.apps import AppConfig


class NextcloudConfig(AppConfig):
    name = "nextcloud"
    verbose_name = "Nextcloud gPodder Sync API"
    default_auto_field = "django.db.models.BigAutoField"
