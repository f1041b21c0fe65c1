from django.apps import AppConfig
from django.conf import settings
from django.contrib.auth.signals import user_logged_in
from django.db.models.signals import post_delete, post_save


class AccountsConfig(AppConfig):
    name = "accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from accounts.authentication import forget_changed_user
        from accounts.sessions import mark_signed_in_session

        # A changed or removed user is read again at once by the next request of this process and,
        # once the change commits, of every other (accounts.invalidation).
        for name, signal in (("post_save", post_save), ("post_delete", post_delete)):
            signal.connect(
                forget_changed_user,
                sender=settings.AUTH_USER_MODEL,
                dispatch_uid=f"accounts.forget_changed_user.{name}",
            )
        # Every sign-in marks where its session may be used (accounts.sessions).
        user_logged_in.connect(mark_signed_in_session, dispatch_uid="accounts.mark_signed_in")
