from django.apps import AppConfig


class FeedchecksConfig(AppConfig):
    name = "feedchecks"
    verbose_name = "feed checks"
    default_auto_field = "django.db.models.BigAutoField"
