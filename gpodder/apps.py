from django.apps import AppConfig


class GpodderConfig(AppConfig):
    name = "gpodder"
    verbose_name = "gpodder.net API"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.conf import settings
        from django.db.models.signals import post_save

        from gpodder.authentication import forget_user_credentials

        # A changed password or a deactivation ends the credentials this process remembers.
        post_save.connect(
            forget_user_credentials,
            sender=settings.AUTH_USER_MODEL,
            dispatch_uid="gpodder.forget_user_credentials",
        )
