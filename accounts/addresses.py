"""An account's email address: set, confirmed by a link mailed to it, and found again by a
password reset (docs/public-instance.md, "Mail").

A confirmation link carries the account, the new address and a mark of the account's state (its
address and password as they were when the mail was made): once the address or the password
changes, every link made before is dead, so each link confirms once. A reset link is Django's
(PasswordResetTokenGenerator), bound the same way to the password, the address and the last
sign-in.
"""

import unicodedata
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import BaseUserManager
from django.contrib.auth.password_validation import validate_password
from django.contrib.auth.tokens import default_token_generator
from django.core import signing
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.utils.crypto import constant_time_compare, salted_hmac
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_decode, urlsafe_base64_encode

from accounts import activity
from accounts.models import AwaitingConfirmation, ConfirmedAddress
from accounts.services import user_lock_standing
from core import clock
from core.exceptions import InvalidInput, NotAuthorized

CONFIRM_SALT = "accounts.addresses.confirm"
LINK_DEAD = (
    "This link does not work any more: it was used already, it is too old, or something of the "
    "account changed since it was sent"
)
ADDRESS_TAKEN = "This address is another account's here already"


def address_checked(address: str) -> str:
    """The address as typed, without the spaces around it and with its domain in lower case;
    InvalidInput naming what is wrong. An empty one is no address."""
    address = address.strip()
    if not address:
        return ""
    try:
        # A quoted local part may hold control characters, and an invisible one (a zero-width
        # space) would make one mailbox two addresses here: no mailbox needs either.
        if any(unicodedata.category(ch) in ("Cc", "Cf") for ch in address):
            raise ValidationError("control or invisible characters")
        validate_email(address)
        local, _, domain = address.rpartition("@")
        # Django's check folds case by Unicode's rules (the long s passes as "s"), and a mail
        # server reads only ASCII before the @; after it, a name IDNA can write.
        if not local.isascii():
            raise ValidationError("not ASCII")
        domain.encode("idna")
    except (ValidationError, UnicodeError):
        message = "Enter an email address like someone@example.com"
        raise InvalidInput(message, errors={"address": [message + "."]}) from None
    return BaseUserManager.normalize_email(address)


def state_mark(user: Any) -> str:
    """The account's address, the address it confirmed and when, and its password, digested:
    confirming changes the second, and each confirmation's time is its own, so a link confirms
    once and never again, even once the address is back to what it was. Taken when the mail is
    asked for (mail.models.Mail.mark): a password changed before it is sent kills its link."""
    held = ConfirmedAddress.objects.filter(user_id=user.pk).values_list("key", "confirmed").first()
    key, confirmed = held or ("", None)
    stamp = confirmed.isoformat() if confirmed else ""
    state = f"{user.email}\0{key}\0{stamp}\0{user.password}"
    return salted_hmac("accounts.addresses.state", state).hexdigest()[:32]


def confirmation_token(*, user: Any, address: str, mark: str) -> str:
    """The token of a link that makes `address` the user's confirmed address, while the account
    is in the state `mark` (state_mark) was taken of."""
    given = {"user": user.pk, "address": address, "mark": mark}
    return signing.dumps(given, salt=CONFIRM_SALT)


def confirmable(user: Any) -> bool:
    """Whether a link may confirm an address of the user's: an account that is on, or one
    registered that waits for its address to be confirmed (not one staff turned off)."""
    return bool(user.is_active) or AwaitingConfirmation.objects.filter(user_id=user.pk).exists()


def _confirming(token: str, *, lock: bool) -> tuple[Any, str]:
    try:
        given = signing.loads(token, salt=CONFIRM_SALT, max_age=settings.EMAIL_CONFIRM_TIMEOUT)
        user_id, address, mark = given["user"], given["address"], given["mark"]
        users = get_user_model().objects.filter(pk=int(user_id))
    except (signing.BadSignature, KeyError, TypeError, ValueError):
        raise NotAuthorized(LINK_DEAD) from None
    user = (users.select_for_update() if lock else users).first()
    if (
        user is None
        or not confirmable(user)
        or not (
            isinstance(mark, str)
            and isinstance(address, str)
            and constant_time_compare(mark, state_mark(user))
        )
    ):
        raise NotAuthorized(LINK_DEAD)
    return user, address


def confirmation_read(*, token: str) -> tuple[Any, str]:
    """The account and the address a confirmation link is for; NotAuthorized (LINK_DEAD) when it
    is forged, too old, used, or made before the account's address or password changed."""
    return _confirming(token, lock=False)


def address_confirm(*, token: str) -> Any:
    """Make the link's address its account's, confirmed; returns the user. NotAuthorized as
    confirmation_read; InvalidInput (ADDRESS_TAKEN) when another account confirmed it first."""
    with transaction.atomic():
        user, address = _confirming(token, lock=True)
        key = address.lower()
        # A row another account holds for an address that is no longer its own (staff changed
        # it in the admin) holds nothing.
        for held in ConfirmedAddress.objects.select_related("user").filter(key=key):
            if held.user_id != user.pk and held.user.email.lower() != key:
                held.delete()
        try:
            with transaction.atomic():
                ConfirmedAddress.objects.update_or_create(
                    user=user, defaults={"address": address, "key": key, "confirmed": clock.now()}
                )
        except IntegrityError:
            raise InvalidInput(ADDRESS_TAKEN, errors={"address": [ADDRESS_TAKEN + "."]}) from None
        user.email = address
        # A registration waiting for this address is an account from now on.
        awaited, _ = AwaitingConfirmation.objects.filter(user_id=user.pk).delete()
        user.is_active = user.is_active or bool(awaited)
        user.save(update_fields=["email", "is_active"])
    return user


def registration_awaits(*, user: Any, address: str) -> None:
    """Hold a new account off until `address` is confirmed (where there is mail): the caller
    then mails it the link (mail.services.confirmation_send)."""
    user.email = address
    user.is_active = False
    user.save(update_fields=["email", "is_active"])
    AwaitingConfirmation.objects.create(user=user, registered=clock.now())


def unconfirmed_registrations_purge() -> int:
    """Delete the accounts registered whose confirmation link is too old and was never opened:
    nothing of them but the row was ever made, and their username is free again. Returns how
    many."""
    before = clock.now() - timedelta(seconds=settings.EMAIL_CONFIRM_TIMEOUT + 3600)
    stale = AwaitingConfirmation.objects.filter(registered__lt=before, user__is_active=False)
    users = get_user_model().objects.filter(pk__in=stale.values("user_id"), is_active=False)
    deleted = 0
    for user in users:
        user.delete()
        deleted += 1
    return deleted


def address_set(*, user: Any, address: str) -> None:
    """The user's address, written as it is, unconfirmed: where no mail can confirm it (no
    EMAIL_URL), and to remove it ("")."""
    address = address_checked(address)
    with transaction.atomic():
        user_lock_standing(user.pk)
        get_user_model().objects.filter(pk=user.pk).update(email=address)
        ConfirmedAddress.objects.filter(user_id=user.pk).exclude(key=address.lower()).delete()
    user.email = address


def confirmed_among(users: Iterable[Any]) -> set[Any]:
    """The ids of those of `users` whose address is the one they confirmed, in one query."""
    emails = {user.pk: user.email for user in users}
    held = ConfirmedAddress.objects.filter(user_id__in=emails).values_list("user_id", "key")
    return {pk for pk, key in held if emails[pk] and emails[pk].lower() == key}


def address_confirmed(*, user: Any) -> bool:
    """Whether the user's address is the one they confirmed."""
    return user.pk in confirmed_among([user])


def users_by_address(address: str) -> list[Any]:
    """The accounts a password reset to `address` is for: on or suspended for inactivity (whose
    person comes back, having forgotten it), with a password of their own, whose address is
    `address` in any case."""
    if not address:
        return []
    users = get_user_model().objects.filter(activity.active_or_suspended(), email__iexact=address)
    users = users.order_by("pk")
    return [user for user in users if user.has_usable_password()]


def reset_link_parts(user: Any) -> tuple[str, str]:
    """The two parts of a password reset link for the user: its account, and Django's token."""
    return urlsafe_base64_encode(force_bytes(user.pk)), default_token_generator.make_token(user)


def _resetting(uidb64: str, token: str, *, lock: bool) -> Any:
    try:
        user_id = int(urlsafe_base64_decode(uidb64).decode("ascii"))
    except (ValueError, TypeError, UnicodeDecodeError):
        raise NotAuthorized(LINK_DEAD) from None
    found = get_user_model().objects.filter(activity.active_or_suspended(), pk=user_id)
    if lock:  # the row, as user_lock_standing's, of an account on or suspended
        found = found.select_for_update(no_key=True, of=("self",))
    user = found.first()
    if user is None or not default_token_generator.check_token(user, token):
        raise NotAuthorized(LINK_DEAD)
    return user


def reset_link_user(*, uidb64: str, token: str) -> Any:
    """The account a password reset link is for; NotAuthorized (LINK_DEAD) when the link is
    forged, older than PASSWORD_RESET_TIMEOUT, used, or made before the account's password,
    address or last sign-in changed, or the account is off (but for a suspension for
    inactivity, which the new password lifts)."""
    return _resetting(uidb64, token, lock=False)


def password_reset_by_link(*, uidb64: str, token: str, password: str) -> Any:
    """The password a reset link's person chose; returns the user. Checked under the lock of
    the account's row, so that a link used twice at once sets one password, and dead once it
    has (the new password changes what the token is made of). Like every password change, it
    ends the account's sessions and tokens; its app passwords stay. NotAuthorized as
    reset_link_user; InvalidInput when the validators refuse the password."""
    with transaction.atomic():
        user = _resetting(uidb64, token, lock=True)
        try:
            validate_password(password, user=user)
        except ValidationError as exc:
            raise InvalidInput(" ".join(exc.messages), errors={"password": exc.messages}) from None
        user.set_password(password)
        user.save(update_fields=["password"])
        activity.suspension_lift(user_id=user.pk)
    return user
