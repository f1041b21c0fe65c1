"""What the Nextcloud API keeps of its own: how far each device's downloads of episode actions
read (ActionsRead), and the Login Flow v2 requests in progress (LoginFlow)."""

from django.conf import settings
from django.db import models


class ActionsRead(models.Model):
    """Up to where a device's last download of episode actions read (docs/nextcloud.md)."""

    device = models.OneToOneField(
        "gpodder.Device", on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    up_to = models.BigIntegerField(help_text="Unix seconds: the next download starts here.")

    def __str__(self) -> str:
        return f"{self.device_id}: {self.up_to}"


class LoginFlow(models.Model):
    """An app's request to sync with an account, from the moment it asks (POST /login/v2) until
    it collects its app password, is denied, or 20 minutes pass (docs/nextcloud.md, "Logging
    in").

    The two tokens are kept only as SHA-256 digests: the app holds the poll token, the person's
    browser the login token, and whoever reads this table learns neither. Both are 64 random
    letters and digits, so a plain digest found by its index is as good as a slow hash. No app
    password is kept here: it is made when the app collects it, and the flow is deleted then.
    """

    poll_digest = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the token.")
    login_digest = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the token.")
    client_name = models.CharField(
        max_length=100, help_text="The app that asks, from its User-Agent."
    )
    created = models.DateTimeField(db_index=True)
    # Shown on the page the person allows the app on, so that a link someone else started (a
    # phishing copy naming a real app) can be told from their own app's.
    started_from = models.GenericIPAddressField(
        null=True, blank=True, help_text="The address the app started the flow from."
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        help_text="The account that allowed it; empty while nobody has.",
    )
    granted = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(poll_digest__regex=r"^[0-9a-f]{64}$")
                & models.Q(login_digest__regex=r"^[0-9a-f]{64}$"),
                name="loginflow_digests_sha256",
            ),
            models.CheckConstraint(
                condition=models.Q(user__isnull=True, granted__isnull=True)
                | models.Q(user__isnull=False, granted__isnull=False),
                name="loginflow_granted_with_user",
            ),
        ]

    def __str__(self) -> str:
        return self.client_name
