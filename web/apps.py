from django.apps import AppConfig


class WebConfig(AppConfig):
    """The account holders' own pages: their subscriptions, devices, history and data."""

    name = "web"
    verbose_name = "Account holders' pages"
