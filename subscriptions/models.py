"""A user's feed subscriptions, with every guid and feed URL each one has had."""

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Coalesce, Greatest


class Subscription(models.Model):
    """One feed a user follows, identified by its current guid.

    Its earlier guids and feed URLs live in SubscriptionGuid and SubscriptionFeed, which also
    hold the current ones, so that any of them reaches this row.
    """

    # Indexed by the composite indexes below, which all start with it.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="subscriptions",
        db_index=False,
    )
    guid = models.UUIDField(help_text="Current guid.")
    feed_url = models.CharField(max_length=2048, help_text="Current feed URL, as sent.")
    is_subscribed = models.BooleanField(default=True)
    subscription_changed = models.DateTimeField()
    guid_changed = models.DateTimeField(null=True, blank=True)
    deleted = models.DateTimeField(null=True, blank=True)
    created = models.DateTimeField()
    # The list's `since` asks for any of three timestamps being later: one column, computed by
    # the database so no write can forget it, lets an index answer that.
    changed = models.GeneratedField(
        expression=Greatest(
            F("subscription_changed"),
            Coalesce(F("guid_changed"), F("subscription_changed")),
            Coalesce(F("deleted"), F("subscription_changed")),
        ),
        output_field=models.DateTimeField(),
        db_persist=True,
        help_text="The latest of subscription_changed, guid_changed and deleted.",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "guid"], name="subscription_user_guid_unique"),
            models.CheckConstraint(
                condition=Q(deleted__isnull=True) | Q(is_subscribed=False),
                name="subscription_deleted_is_unsubscribed",
            ),
        ]
        indexes = [
            # Pages in creation order, filtered by `changed`, read from the index alone.
            models.Index(fields=["user", "id", "changed"], name="subscription_user_id_idx"),
            models.Index(fields=["user", "changed"], name="subscription_user_changed_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.feed_url} ({self.guid})"


class SubscriptionGuid(models.Model):
    """A guid a subscription has, or has had: unique per user, so it names one subscription."""

    # Indexed by the unique constraint below, which starts with it.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    subscription = models.ForeignKey(
        Subscription, on_delete=models.CASCADE, related_name="guid_history", db_index=False
    )
    guid = models.UUIDField()
    assigned = models.DateTimeField(help_text="When the subscription took this guid.")
    # A merge ends a guid without adding one, so this cannot be derived from the next row.
    replaced = models.DateTimeField(
        null=True, blank=True, help_text="When this guid stopped being its subscription's guid."
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "guid"], name="subscriptionguid_user_guid_unique"
            )
        ]
        indexes = [
            models.Index(fields=["subscription", "assigned"], name="subscriptionguid_sub_idx")
        ]
        ordering = ["assigned", "id"]

    def __str__(self) -> str:
        return str(self.guid)


class SubscriptionFeed(models.Model):
    """A feed URL a subscription has, or has had, under its matching key (unique per user)."""

    # Indexed by the unique constraint below, which starts with it.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    subscription = models.ForeignKey(
        Subscription, on_delete=models.CASCADE, related_name="feed_history"
    )
    url = models.CharField(max_length=2048, help_text="The URL as first sent.")
    # A digest, not the key itself: a 2,048-character URL of multi-byte characters would not fit
    # in a btree index entry.
    key_digest = models.CharField(max_length=64, help_text="SHA-256 of the URL's matching key.")
    assigned = models.DateTimeField(help_text="When the subscription took this URL.")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "key_digest"], name="subscriptionfeed_user_key_unique"
            )
        ]
        # A feed check finds every user's subscription at the URL it fetched.
        indexes = [models.Index(fields=["key_digest"], name="subscriptionfeed_key_idx")]
        ordering = ["assigned", "id"]

    def __str__(self) -> str:
        return self.url
