from django.apps import AppConfig


class FeedchecksConfig(AppConfig):
    name = "feedchecks"
    verbose_name = "feed checks"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from feedchecks.receivers import check_feeds_after_commit, titles_of_feeds
        from subscriptions.signals import feed_check_wanted, feed_titles_wanted

        feed_check_wanted.connect(
            check_feeds_after_commit, dispatch_uid="feedchecks.check_feeds_after_commit"
        )
        feed_titles_wanted.connect(titles_of_feeds, dispatch_uid="feedchecks.titles_of_feeds")
