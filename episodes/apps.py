from django.apps import AppConfig


class EpisodesConfig(AppConfig):
    name = "episodes"
    verbose_name = "episode actions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from episodes.receivers import delete_actions_of_deleted
        from subscriptions.signals import subscriptions_deleted

        subscriptions_deleted.connect(
            delete_actions_of_deleted, dispatch_uid="episodes.delete_actions_of_deleted"
        )
