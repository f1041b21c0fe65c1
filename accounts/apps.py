from django.apps import AppConfig
from django.conf import settings
from django.db.models.signals import post_delete, post_save


class AccountsConfig(AppConfig):
    name = "accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from accounts.authentication import forget_changed_user

        # A changed or removed user is read again by this process's next request at once.
        for name, signal in (("post_save", post_save), ("post_delete", post_delete)):
            signal.connect(
                forget_changed_user,
                sender=settings.AUTH_USER_MODEL,
                dispatch_uid=f"accounts.forget_changed_user.{name}",
            )
