import logging

from django.apps import AppConfig

from nextcloud.logs import RequestLineFilter


class NextcloudConfig(AppConfig):
    name = "nextcloud"
    verbose_name = "Nextcloud gPodder Sync API"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The development server logs each request line, a poll's `?token=` included.
        logging.getLogger("django.server").addFilter(RequestLineFilter())
