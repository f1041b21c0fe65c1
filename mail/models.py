"""The service's outgoing mail (docs/public-instance.md, "Mail")."""

from django.conf import settings
from django.db import models


class Mail(models.Model):
    """One mail to send, written by the request that asks for it and sent after it, by a worker
    or (without a broker) a thread of the web process; tried again by the sweep until it is sent
    or its tries are spent, and shown to staff either way.

    Its text is not kept: it is written when it is sent, from the account as it is then, so no
    link in it is ever stored, and a mail for an account that changed meanwhile says what is
    true now. A password reset names the address only: whether any account uses it is found
    when it is sent, so the request that asks takes the same steps whichever it is.
    """

    class Kind(models.TextChoices):
        RESET = "reset", "Password reset"
        CONFIRM = "confirm", "Address to confirm"
        INACTIVE = "inactive", "Account unused"

    class State(models.TextChoices):
        PENDING = "pending", "To send"
        SENT = "sent", "Sent"
        NONE = "none", "Nothing to send"
        FAILED = "failed", "Failed"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    address = models.EmailField(help_text="Where it goes.")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="+",
        help_text="The account it is for, when the request named one.",
    )
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    tries = models.PositiveSmallIntegerField(default=0)
    next_try = models.DateTimeField(help_text="When the sweep may try it again.")
    error = models.TextField(blank=True, help_text="What the last try was answered.")
    # A confirmation's link is good only while the account is as it was when it was asked for
    # (accounts.addresses.state_mark): a password changed before the mail goes out kills it.
    mark = models.CharField(max_length=64, blank=True)
    created = models.DateTimeField()
    sent = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["state", "next_try"], name="mail_state_next_try")]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(kind__in=["reset", "confirm", "inactive"]),
                name="mail_kind_known",
            ),
            models.CheckConstraint(
                condition=models.Q(state__in=["pending", "sent", "none", "failed"]),
                name="mail_state_known",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} to {self.address}"
