"""What the background check of each feed URL found, shared by every user of that URL."""

from django.db import models


class FeedCheck(models.Model):
    """The latest fetch of one feed URL, keyed by its matching key like SubscriptionFeed.

    `claimed` is when a worker last took the URL to fetch it: a conditional UPDATE of it lets
    one worker at most fetch a URL per FEED_CHECK_INTERVAL, however many users add it.
    """

    class Result(models.TextChoices):
        GUID = "guid", "guid found"
        MOVED = "moved", "moved"
        NOTHING = "nothing", "no guid, not moved"
        ERROR = "error", "error"

    key_digest = models.CharField(
        max_length=64, unique=True, help_text="SHA-256 of the URL's matching key."
    )
    url = models.CharField(max_length=2048, help_text="The URL fetched, as first sent.")
    claimed = models.DateTimeField(null=True, blank=True, help_text="When a fetch last started.")
    checked = models.DateTimeField(null=True, blank=True, help_text="When a fetch last ended.")
    result = models.CharField(max_length=16, choices=Result.choices, blank=True)
    error = models.TextField(blank=True, help_text="Why the last fetch failed.")
    guid = models.UUIDField(null=True, blank=True, help_text="The feed's podcast:guid.")
    new_url = models.CharField(
        max_length=2048,
        blank=True,
        help_text="Where the feed moved: its itunes:new-feed-url, else its 301/308 target.",
    )
    # What the account holders' pages show. Kept from the last fetch that read the feed: a feed
    # that is down for a while keeps its name.
    title = models.CharField(max_length=500, blank=True, help_text="The channel's title.")
    link = models.CharField(max_length=2048, blank=True, help_text="The podcast's website.")
    image_url = models.CharField(max_length=2048, blank=True, help_text="The podcast's artwork.")

    class Meta:
        ordering = ["-checked", "id"]

    def __str__(self) -> str:
        return self.url
