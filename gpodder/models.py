"""A user's devices, as gpodder apps name them, and the spelling of each feed URL a device sent."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from subscriptions.models import SubscriptionFeed


class Device(models.Model):
    """An app on one of the user's devices, created the first time a request names it.

    Every device of a user sees every subscription of the user: they form one sync group.
    """

    class Type(models.TextChoices):
        DESKTOP = "desktop"
        LAPTOP = "laptop"
        MOBILE = "mobile"
        SERVER = "server"
        OTHER = "other"

    # Indexed by the unique constraint below, which starts with it.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="gpodder_devices",
        db_index=False,
    )
    device_id = models.CharField(max_length=64, help_text="The id the app uses in its paths.")
    caption = models.CharField(max_length=255, blank=True)
    type = models.CharField(max_length=7, choices=Type.choices, default=Type.OTHER)
    created = models.DateTimeField()
    last_used = models.DateTimeField(
        help_text="When a request last named the device (to the minute)."
    )
    pulled_up_to = models.BigIntegerField(
        null=True,
        blank=True,
        help_text="The timestamp its last subscription pull answered (null: none yet): an "
        "upload answers no later one when another change came after it.",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "device_id"], name="device_user_id_unique"),
            models.CheckConstraint(
                condition=Q(type__in=["desktop", "laptop", "mobile", "server", "other"]),
                name="device_type_valid",
            ),
        ]

    def __str__(self) -> str:
        return self.device_id


class DeviceFeed(models.Model):
    """The spelling of a feed URL that a device last sent, answered back to that device.

    Keyed by the URL history row of the feed's matching key, which stays with the feed's
    subscription through moves and merges, so a device keeps its own spelling and never meets a
    variant of a URL it already has.
    """

    device = models.ForeignKey(
        Device, on_delete=models.CASCADE, related_name="feeds", db_index=False
    )
    feed = models.ForeignKey(SubscriptionFeed, on_delete=models.CASCADE, related_name="+")
    url = models.CharField(max_length=2048, help_text="The URL as the device sent it.")
    sent = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["device", "feed"], name="devicefeed_device_feed_unique")
        ]

    def __str__(self) -> str:
        return self.url


# How many of a device's sync events are kept: its latest, enough for a few syncs of every kind.
SYNC_EVENTS_KEPT = 20


class DeviceSyncEvent(models.Model):
    """One sync request of a device, as its page shows it (docs/web.md, "Devices"): what it
    pulled or uploaded, how many, and what was refused and why.

    A device keeps its latest SYNC_EVENTS_KEPT in as many slots, a ring: each request writes
    over the oldest, in one statement (gpodder.diagnostics), so the table never grows past that
    per device and nothing has to sweep it.
    """

    class Kind(models.TextChoices):
        PULL = "pull", "pull"
        UPLOAD = "upload", "upload"
        REFUSAL = "refusal", "refused request"

    class Data(models.TextChoices):
        SUBSCRIPTIONS = "subscriptions", "subscriptions"
        EPISODE_ACTIONS = "episode_actions", "episode actions"

    class Protocol(models.TextChoices):
        GPODDER = "gpodder", "gpodder.net API"
        NEXTCLOUD = "nextcloud", "Nextcloud API"

    # Indexed by the unique constraint below, which starts with it.
    device = models.ForeignKey(
        Device, on_delete=models.CASCADE, related_name="sync_events", db_index=False
    )
    slot = models.PositiveSmallIntegerField(help_text="Its place in the device's ring.")
    seq = models.BigIntegerField(help_text="The device's events in the order they came.")
    at = models.DateTimeField()
    kind = models.CharField(max_length=7, choices=Kind.choices)
    data = models.CharField(max_length=15, choices=Data.choices)
    protocol = models.CharField(max_length=9, choices=Protocol.choices)
    agent = models.CharField(max_length=255, blank=True, help_text="The app's User-Agent.")
    session = models.CharField(
        max_length=16,
        blank=True,
        help_text="A digest of the app's session on the gpodder API: two installs of one app "
        "are told apart by it.",
    )
    count = models.PositiveIntegerField(
        default=0, help_text="What the device was sent (a pull), or sent and was taken."
    )
    refused = models.PositiveIntegerField(
        default=0, help_text="What the device sent that was refused or left out."
    )
    reason = models.CharField(max_length=255, blank=True, help_text="Why, in words.")
    detail = models.CharField(max_length=255, blank=True, help_text="What was sent, in words.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["device", "slot"], name="devicesyncevent_slot_unique"),
            models.CheckConstraint(
                condition=Q(slot__lt=SYNC_EVENTS_KEPT), name="devicesyncevent_slot_in_ring"
            ),
            models.CheckConstraint(
                condition=Q(kind__in=["pull", "upload", "refusal"]),
                name="devicesyncevent_kind_valid",
            ),
            models.CheckConstraint(
                condition=Q(data__in=["subscriptions", "episode_actions"]),
                name="devicesyncevent_data_valid",
            ),
            models.CheckConstraint(
                condition=Q(protocol__in=["gpodder", "nextcloud"]),
                name="devicesyncevent_protocol_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.device_id} {self.kind} {self.data} at {self.at}"
