from django.apps import AppConfig


class SubscriptionsConfig(AppConfig):
    name = "subscriptions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # This app owns the accounts' admin; the token check's cache forgets changed users.
        from config import auth  # noqa: F401
