from django.apps import AppConfig


class DeletionsConfig(AppConfig):
    name = "deletions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from deletions.receivers import hold_while_deletion_pending
        from subscriptions.signals import change_held

        change_held.connect(
            hold_while_deletion_pending, dispatch_uid="deletions.hold_while_deletion_pending"
        )
