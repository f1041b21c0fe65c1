"""Requests to delete a subscription, or a whole account, processed asynchronously by a Celery
worker."""

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q


class Work(models.Model):
    """What every deletion request has: how it ended, and how often it was sent and started
    (the sweep and the worker read them the same way for both kinds)."""

    class Status(models.TextChoices):
        PENDING = "PENDING"
        SUCCESS = "SUCCESS"
        FAILURE = "FAILURE"

    status = models.CharField(max_length=7, choices=Status.choices, default=Status.PENDING)
    message = models.TextField(blank=True)
    requested = models.DateTimeField()
    finished = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(
        default=0, help_text="How many times a worker has started on it."
    )
    sends = models.PositiveIntegerField(default=0, help_text="How many times it has been sent.")
    last_sent = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True


class Deletion(Work):
    """One request to delete one subscription, and how it ended.

    At most one deletion per subscription is PENDING at a time (a database constraint), so a
    repeated DELETE finds the pending one instead of queueing a second.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="deletions"
    )
    # Null once the subscription is gone, for instance merged into another.
    subscription = models.ForeignKey(
        "subscriptions.Subscription",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="deletions",
    )
    guid = models.UUIDField(help_text="The guid the deletion was requested with.")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["subscription"],
                condition=Q(status="PENDING"),
                name="deletion_one_pending_per_subscription",
            ),
            models.CheckConstraint(
                condition=Q(status__in=["PENDING", "SUCCESS", "FAILURE"]),
                name="deletion_status_valid",
            ),
        ]
        indexes = [models.Index(fields=["status", "last_sent"], name="deletion_status_sent_idx")]

    def __str__(self) -> str:
        return f"Deletion {self.pk} of {self.guid}: {self.status}"


class AccountDeletion(Work):
    """One request to delete a whole account, and how it ended.

    The person is signed out at once; a worker then deletes the user with everything of it in
    one transaction. `key` is random: the status page is reached by it, since the account that
    asked is signed out, then gone (and `user` with it). At most one is PENDING per user.
    """

    key = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="account_deletions",
    )
    username = models.CharField(max_length=150, help_text="The account's name when asked.")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user"],
                condition=Q(status="PENDING"),
                name="accountdeletion_one_pending_per_user",
            ),
            models.CheckConstraint(
                condition=Q(status__in=["PENDING", "SUCCESS", "FAILURE"]),
                name="accountdeletion_status_valid",
            ),
        ]
        indexes = [models.Index(fields=["status", "last_sent"], name="accountdel_status_sent_idx")]

    def __str__(self) -> str:
        return f"Deletion of the account {self.username}: {self.status}"
