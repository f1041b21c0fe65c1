from django.apps import AppConfig
from django.conf import settings
from django.contrib.auth.signals import user_logged_in
from django.db.models.signals import post_delete, post_save


class AccountsConfig(AppConfig):
    name = "accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.contrib.auth.management.commands import createsuperuser
        from django.contrib.auth.models import update_last_login

        from accounts.active import forget_changed_user
        from accounts.management.commands.createsuperuser import Command as CreateSuperuser
        from accounts.services import login_stamp
        from accounts.sessions import mark_signed_in_session

        # A changed or removed user is read again at once by the next request of this process and,
        # once the change commits, of every other (accounts.invalidation).
        for name, signal in (("post_save", post_save), ("post_delete", post_delete)):
            signal.connect(
                forget_changed_user,
                sender=settings.AUTH_USER_MODEL,
                dispatch_uid=f"accounts.forget_changed_user.{name}",
            )
        # Every sign-in first stamps its last login (login_stamp, in place of Django's receiver,
        # whose save fails when the account was deleted meanwhile), then marks where its session
        # may be used (accounts.sessions).
        user_logged_in.disconnect(update_last_login, dispatch_uid="update_last_login")
        user_logged_in.connect(login_stamp, dispatch_uid="accounts.login_stamp")
        user_logged_in.connect(mark_signed_in_session, dispatch_uid="accounts.mark_signed_in")
        # Django's auth, listed before this app, provides createsuperuser: its class is this
        # app's, which refuses a username another account has in another case.
        createsuperuser.Command = CreateSuperuser  # type: ignore[misc]
