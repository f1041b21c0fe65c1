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

    class Failure(models.TextChoices):
        """Why a fetch ended in ERROR, as the pages tell it (FAILURE_EXPLAINED); `error` keeps
        the details. Set by the check that records the error, from what it caught."""

        NOT_FOUND = "not_found", "not found"
        HTTP_ERROR = "http_error", "server error"
        TIMED_OUT = "timed_out", "timed out"
        NOT_A_FEED = "not_a_feed", "not a feed"
        REFUSED_NETWORK = "refused_network", "refused network"
        CANNOT_RESOLVE = "cannot_resolve", "cannot resolve"
        CANNOT_CONNECT = "cannot_connect", "cannot connect"
        TOO_LARGE = "too_large", "too large"
        TOO_COMPLEX = "too_complex", "too complex"
        UNSAFE = "unsafe", "DTD or entities"
        TLS = "tls", "TLS failure"
        REDIRECTS = "redirects", "bad redirects"
        OTHER = "other", "other"

    key_digest = models.CharField(
        max_length=64, unique=True, help_text="SHA-256 of the URL's matching key."
    )
    url = models.CharField(max_length=2048, help_text="The URL fetched, as first sent.")
    claimed = models.DateTimeField(null=True, blank=True, help_text="When a fetch last started.")
    checked = models.DateTimeField(null=True, blank=True, help_text="When a fetch last ended.")
    result = models.CharField(max_length=16, choices=Result.choices, blank=True)
    error = models.TextField(blank=True, help_text="Why the last fetch failed.")
    failure = models.CharField(
        max_length=16,
        choices=Failure.choices,
        blank=True,
        default="",
        # In the database too: the previous release's processes, during a rolling upgrade, and
        # bench's bulk loads write rows without it.
        db_default="",
        help_text="The kind of failure of the last fetch, when it failed.",
    )
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
        constraints = [
            # Only a failed check has a kind of failure. (Every failure this release records has
            # one; the previous release's, during a rolling upgrade, have none.)
            models.CheckConstraint(
                condition=models.Q(result="error") | models.Q(failure=""),
                name="feedcheck_failure_only_of_error",
            )
        ]
        indexes = [
            # The retry sweep: failed checks, the longest since claimed first. Only failures are
            # in it, a small share of the table.
            models.Index(
                fields=["claimed"], condition=models.Q(result="error"), name="feedcheck_failed_idx"
            )
        ]

    def __str__(self) -> str:
        return self.url


# What the pages say of each kind of failure, after "This feed can't be fetched:".
FAILURE_EXPLAINED: dict[str, str] = {
    FeedCheck.Failure.NOT_FOUND: "nothing was found at its address.",
    FeedCheck.Failure.HTTP_ERROR: "its server answered with an error.",
    FeedCheck.Failure.TIMED_OUT: "its server took too long to answer.",
    FeedCheck.Failure.NOT_A_FEED: "its address serves something that is not a podcast feed.",
    FeedCheck.Failure.REFUSED_NETWORK: (
        "its address is on a private network, which this server does not fetch from."
    ),
    FeedCheck.Failure.CANNOT_RESOLVE: "its host name could not be found.",
    FeedCheck.Failure.CANNOT_CONNECT: "its server could not be reached.",
    FeedCheck.Failure.TOO_LARGE: (
        "it is larger than this server reads, and the part read is not a feed."
    ),
    FeedCheck.Failure.TOO_COMPLEX: "it would take too long to read.",
    FeedCheck.Failure.UNSAFE: "it declares a DTD or entities, which are never read, for safety.",
    FeedCheck.Failure.TLS: (
        "a secure connection to its server could not be made (a certificate that does not check "
        "out, most often)."
    ),
    FeedCheck.Failure.REDIRECTS: (
        "its address redirects too many times, or to an address that may not be fetched."
    ),
    FeedCheck.Failure.OTHER: "the check failed.",
}


class FeedEpisode(models.Model):
    """One episode of a feed, as its last successful check read it: the catalogue the pages name
    episodes from (docs/web.md, "Episodes by name"). One row per (feed, item), changed in place
    when the feed changes the item, and the newest FEED_EPISODES_KEPT of a feed kept.

    An item is the same item from check to check by its guid, else by its enclosure URL's
    matching key (`item_key`). An action finds its episode by the guid it names within the
    podcast, else by its episode URL's key: the enclosure's now, or the one before the feed
    last changed it (a tracking prefix added), so what was played under the old URL keeps its
    name.
    """

    feed = models.ForeignKey(
        FeedCheck, on_delete=models.CASCADE, related_name="episodes", help_text="The feed's check."
    )
    item_key = models.CharField(
        max_length=64, help_text="SHA-256 of the item's guid, else of its enclosure URL's key."
    )
    guid = models.CharField(max_length=500, blank=True, help_text="The item's guid.")
    title = models.CharField(max_length=500, blank=True)
    url = models.CharField(max_length=2048, blank=True, help_text="The enclosure's URL.")
    url_key = models.CharField(
        max_length=64, blank=True, help_text="SHA-256 of the enclosure URL's matching key."
    )
    earlier_url_key = models.CharField(
        max_length=64, blank=True, help_text="url_key before the feed last changed it."
    )
    link = models.CharField(max_length=2048, blank=True, help_text="The episode's web page.")
    published = models.DateTimeField(null=True, blank=True)
    duration = models.PositiveIntegerField(null=True, blank=True, help_text="In seconds.")
    image_url = models.CharField(
        max_length=2048, blank=True, help_text="The episode's own artwork."
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["feed", "item_key"], name="feedepisode_item_unique")
        ]
        indexes = [
            # An action's match: by guid, else by its URL's key now or before, within the feed.
            models.Index(fields=["feed", "guid"], name="feedepisode_guid_idx"),
            models.Index(fields=["feed", "url_key"], name="feedepisode_url_idx"),
            models.Index(
                fields=["feed", "earlier_url_key"],
                condition=~models.Q(earlier_url_key=""),
                name="feedepisode_earlier_url_idx",
            ),
            # A podcast's latest episodes, and the newest kept when a check prunes.
            models.Index(fields=["feed", "-published"], name="feedepisode_published_idx"),
        ]

    def __str__(self) -> str:
        return self.title or self.url
