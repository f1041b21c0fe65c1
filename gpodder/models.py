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
