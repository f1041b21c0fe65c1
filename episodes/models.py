"""What an app did with an episode, as it uploaded it, and when the service received it."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from gpodder.models import Device


class EpisodeAction(models.Model):
    """One action of one app on one episode: download, delete, play (with where it stopped), new
    or flattr.

    It belongs to the user's subscription whose URL history holds its podcast's matching key
    (`podcast_key`), whichever spelling was sent; so actions follow a subscription through moves
    and merges, and reach one added later, without a foreign key to keep up to date.
    """

    class Action(models.TextChoices):
        DOWNLOAD = "download"
        DELETE = "delete"
        PLAY = "play"
        NEW = "new"
        FLATTR = "flattr"

    # Indexed by the indexes below, which all start with it.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="episode_actions",
        db_index=False,
    )
    # A device deleted by staff leaves its actions, without a device: they are the user's history.
    device = models.ForeignKey(
        Device, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", db_index=False
    )
    podcast = models.CharField(max_length=2048, help_text="The feed URL, as the app sent it.")
    # A digest, not the key: a long URL of multi-byte characters would not fit a btree entry.
    podcast_key = models.CharField(
        max_length=64, help_text="SHA-256 of the podcast URL's matching key."
    )
    episode = models.CharField(max_length=2048, help_text="The episode's URL (or guid).")
    action = models.CharField(max_length=8, choices=Action.choices)
    timestamp = models.DateTimeField(help_text="When the app says the action happened.")
    received = models.DateTimeField(
        help_text="When the service received it, to the second: what a download's since counts."
    )
    # db_default: the previous release's processes insert without it during a rolling upgrade.
    episode_key = models.CharField(
        max_length=64,
        blank=True,
        db_default="",
        help_text="SHA-256 of the episode URL's matching key: how its name is found in the feed.",
    )
    guid = models.CharField(max_length=2048, blank=True, help_text="The episode's guid, if sent.")
    started = models.PositiveIntegerField(null=True, blank=True)
    position = models.PositiveIntegerField(null=True, blank=True)
    total = models.PositiveIntegerField(null=True, blank=True)
    # Apps send an action again when an answer is lost: the database keeps one of each.
    identity = models.CharField(
        max_length=64,
        help_text="SHA-256 of the action's fields as stored (URLs sanitised, the time filled in).",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "identity"], name="episodeaction_user_identity_unique"
            ),
            models.CheckConstraint(
                condition=Q(action__in=["download", "delete", "play", "new", "flattr"]),
                name="episodeaction_action_valid",
            ),
            models.CheckConstraint(
                condition=Q(action="play")
                | Q(started__isnull=True, position__isnull=True, total__isnull=True),
                name="episodeaction_play_fields_on_play",
            ),
        ]
        indexes = [
            # A download's since: the user's actions from a received second on, in order.
            models.Index(fields=["user", "received", "id"], name="episodeaction_received_idx"),
            # A download's podcast filter, and a subscription's deletion.
            models.Index(fields=["user", "podcast_key"], name="episodeaction_podcast_idx"),
            # Deleting a device (or its user) finds its actions without reading every user's.
            models.Index(
                fields=["device"],
                condition=Q(device__isnull=False),
                name="episodeaction_device_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.action} {self.episode}"


class ReceivedClock(models.Model):
    """The latest second a user's actions were stamped with.

    Kept apart from the actions: deleting actions (a subscription's) must not move it back, or
    a later upload could be stamped before a timestamp a download has answered already.
    """

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="episode_received_clock",
    )
    second = models.DateTimeField()
    # No longer used (each upload takes one second now); kept, with a default in the database,
    # for the web processes of the previous release during a rolling upgrade, which still
    # read and write it. To be dropped by a later release.
    used = models.PositiveIntegerField(db_default=0, editable=False)

    def __str__(self) -> str:
        return str(self.second)
