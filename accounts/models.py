"""What the service keeps about people beyond Django's user: their app passwords."""

from django.conf import settings
from django.db import models


class AppPassword(models.Model):
    """A password for one app, made by its person and shown to them once.

    Only a SHA-256 digest of it is kept. It is 120 random bits, so a slow hash like the account
    password's Argon2 would add nothing against guessing; a plain digest lets a login find it by
    an index, without trying every app password of the account. Revoking one deletes the row,
    which ends the app's tokens and sessions: they name it, and it is gone.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="app_passwords",
        db_index=False,  # the unique constraint below starts with it
    )
    name = models.CharField(max_length=100, help_text="The app it is for, in its person's words.")
    digest = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the password.")
    created = models.DateTimeField()
    last_used = models.DateTimeField(
        null=True, blank=True, help_text="When an app last signed in with it (to the minute)."
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "name"], name="apppassword_user_name_unique"),
            models.CheckConstraint(
                condition=models.Q(name__regex=r"\S"), name="apppassword_name_not_blank"
            ),
            models.CheckConstraint(
                condition=models.Q(digest__regex=r"^[0-9a-f]{64}$"),
                name="apppassword_digest_sha256",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class OneTimePassword(models.Model):
    """The account's password is one that staff made and handed over (the People page): it signs
    in on the pages only to choose the person's own, and no app's API takes it.

    `mark` is the password's mark (accounts.active.password_mark) when it was made: once the
    password is another, set whichever way (chosen, changed on the account page, in the admin,
    by `changepassword`), the row no longer marks it and is left to be written over.
    """

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="one_time_password",
    )
    mark = models.CharField(max_length=16, help_text="The mark of the password it was made as.")
    created = models.DateTimeField()

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(mark__regex=r"^[0-9a-f]{16}$"),
                name="onetimepassword_mark_hex",
            ),
        ]

    def __str__(self) -> str:
        return f"One-time password of user {self.user_id}"


class ConfirmedAddress(models.Model):
    """The email address its person confirmed, by a link sent to it (accounts.addresses).

    The account's address is Django's `User.email`; it counts as confirmed while it is this row's
    `address`. Staff writing another one in the admin leaves it unconfirmed, with nothing to keep
    in step. `key`, the address in lower case, is unique: a confirmed address is one account's
    only, which is what signing in by it and linking an identity provider by it rely on.
    """

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="confirmed_address",
    )
    address = models.EmailField()
    key = models.CharField(max_length=254, unique=True, help_text="The address in lower case.")
    confirmed = models.DateTimeField()

    class Meta:
        verbose_name_plural = "confirmed addresses"

    def __str__(self) -> str:
        return self.address


class Invitation(models.Model):
    """A single-use link that makes an account when registration is by invitation
    (accounts.invitations). Only its token's SHA-256 is kept: the link is shown once, to whoever
    made it."""

    digest = models.CharField(max_length=64, unique=True)
    made_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="invitations_made"
    )
    created = models.DateTimeField()
    expires = models.DateTimeField()
    used = models.DateTimeField(null=True, blank=True)
    used_by = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="invitation_used",
    )

    class Meta:
        indexes = [models.Index(fields=["made_by", "-created"], name="invitation_by_maker")]

    def __str__(self) -> str:
        return f"Invitation {self.pk} by user {self.made_by_id}"


class AwaitingConfirmation(models.Model):
    """An account registered where there is mail, whose address its person has yet to confirm:
    off (is_active false) until the link mailed to it is opened (accounts.addresses), and
    deleted once that link is too old. What tells it from an account staff turned off."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="awaiting_confirmation",
    )
    registered = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"User {self.user_id} awaiting confirmation"


class Activity(models.Model):
    """When the account was last used: its last sign-in (the pages, the admin, an app's login)
    or its last request an app's credentials answered on any of the three APIs, to within
    accounts.activity.PRECISION (docs/public-instance.md, "Inactive accounts"). An account
    without one has not been used since it joined. With INACTIVE_ACCOUNT_DAYS, also when its
    person was warned that it goes idle, and when it was suspended for it."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="activity",
    )
    seen = models.DateTimeField(db_index=True)
    warned = models.DateTimeField(null=True, blank=True)
    # Set with is_active false: what tells a suspension for inactivity, which its person lifts
    # by signing in, from an account staff turned off.
    suspended = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "activity"

    def __str__(self) -> str:
        return f"{self.user_id} seen {self.seen:%Y-%m-%d %H:%M}"
