"""What people and staff do with accounts: log in (with the password or an app password),
refresh and log out with tokens; register; make and revoke app passwords; and staff's bootstrap,
(de)activation of users, and the People page's members, each with a one-time password to hand
over, which its person replaces with their own at the first sign-in.

Tokens come from djangorestframework-simplejwt. Refresh tokens rotate: each refresh blacklists
the token it used and hands out a new one; every token is bound to the account's password, so a
new password ends them all (docs/api.md, "Authentication").
"""

import hashlib
import secrets
import unicodedata
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NoReturn

from django.conf import settings
from django.contrib.auth import authenticate, get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.password_validation import validate_password
from django.core import signing
from django.core.exceptions import ValidationError
from django.db import IntegrityError, models, transaction
from django.utils.crypto import constant_time_compare, get_random_string
from rest_framework_simplejwt.exceptions import TokenError
from rest_framework_simplejwt.settings import api_settings
from rest_framework_simplejwt.token_blacklist.models import BlacklistedToken, OutstandingToken
from rest_framework_simplejwt.tokens import RefreshToken

from accounts import activity
from accounts.active import active_users, app_password_stands, app_password_used, password_mark
from accounts.authentication import APP_PASSWORD_CLAIM, PASSWORD_CLAIM
from accounts.models import Activity, AppPassword, AwaitingConfirmation, OneTimePassword
from accounts.selectors import (
    TICKET_SALT,
    TICKET_SECONDS,
    USERNAME_TAKEN,
    password_is_one_time,
    username_taken,
)
from core import clock
from core.exceptions import InvalidInput, NotAuthorized, NotFound

# Lowercase letters and digits without the look-alikes (0/o, 1/l/i): 31 symbols, typed on a
# phone without switching keyboards. 24 of them are 118 bits, in groups of four.
_APP_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"
_APP_LENGTH = 24
# A one-time password is read off a screen and typed once, on a phone as often as not: the same
# symbols, 16 of them (79 bits, behind the login throttle), as four groups of four with their
# dashes. Never 24, so it can never be read as an app password.
_ONE_TIME_LENGTH = 16


def _random_symbols(length: int) -> str:
    return "".join(secrets.choice(_APP_ALPHABET) for _ in range(length))


def _grouped(secret: str) -> str:
    return "-".join(secret[i : i + 4] for i in range(0, len(secret), 4))


@dataclass(frozen=True)
class Tokens:
    access_token: str
    expires_in: int
    refresh_token: str
    refresh_expires: datetime


def refresh_token_for(user: AbstractBaseUser, app_password_id: int | None = None) -> RefreshToken:
    """A refresh token of the user, bound to their password as it is now and, when they signed
    in with one, to the app password (both claims are copied into its access tokens)."""
    refresh = RefreshToken.for_user(user)
    refresh[PASSWORD_CLAIM] = password_mark(user.password)
    if app_password_id is not None:
        refresh[APP_PASSWORD_CLAIM] = app_password_id
    return refresh


def _issue(user: AbstractBaseUser, app_password_id: int | None = None) -> Tokens:
    try:
        refresh = refresh_token_for(user, app_password_id)  # kept: an OutstandingToken row
    except IntegrityError:  # the account was deleted a moment ago: no token is kept of it
        raise NotAuthorized() from None
    return Tokens(
        access_token=str(refresh.access_token),
        expires_in=int(api_settings.ACCESS_TOKEN_LIFETIME.total_seconds()),
        refresh_token=str(refresh),
        refresh_expires=datetime.fromtimestamp(refresh["exp"], tz=UTC),
    )


def _app_digest(password: str) -> str | None:
    """The digest an app password is stored under, if `password` can be one (typed with or
    without its dashes and spaces, in any case)."""
    typed = "".join(password.split()).replace("-", "").lower()
    if len(typed) != _APP_LENGTH or any(ch not in _APP_ALPHABET for ch in typed):
        return None
    return hashlib.sha256(typed.encode()).hexdigest()


def app_authenticate(
    request: Any, *, username: str, password: str
) -> tuple[AbstractBaseUser, int | None] | None:
    """The active user these credentials are for, and the id of the app password they are
    (None: the account's own password); None when they are wrong.

    App passwords are looked up first, by digest (one indexed query); the account's password
    after (Argon2, tens of milliseconds). For apps only: the pages take the account's password.
    """
    if "\x00" in username + password:
        return None  # no account has one, and the database cannot be asked
    digest = _app_digest(password)
    if digest is not None:
        found = (
            AppPassword.objects.filter(
                digest=digest,
                user__is_active=True,
                **{f"user__{get_user_model().USERNAME_FIELD}": username},
            )
            .select_related("user")
            .first()
        )
        if found is not None:
            app_password_used(found.pk, last_used=found.last_used)
            return found.user, found.pk
    user = authenticate(request, username=username, password=password)
    if user is None or password_is_one_time(user=user):
        return None  # a one-time password signs in on the pages only, to choose one's own
    return user, None


def token_login(*, username: str, password: str) -> Tokens:
    found = app_authenticate(None, username=username, password=password)
    if found is None:
        raise NotAuthorized()
    user, app_password_id = found
    if not user_login_stamp(user=user):
        raise NotAuthorized()  # deleted or deactivated while its password was checked
    return _issue(user, app_password_id)


def user_login_stamp(*, user: Any) -> bool:
    """Note that the user signs in now (their last login), in one UPDATE as Django's
    update_last_login; False, and nothing written, when the account is gone or inactive: deleted
    or deactivated since its credentials were checked (where a save would fail)."""
    now = clock.now()
    if not get_user_model().objects.filter(pk=user.pk, is_active=True).update(last_login=now):
        return False
    user.last_login = now
    activity.activity_seen(user.pk, at=now)
    return True


def login_stamp(sender: Any, user: Any, **kwargs: Any) -> None:
    """Receiver of user_logged_in (AccountsConfig.ready), in place of Django's
    update_last_login: a sign-in whose account went meanwhile stamps nothing, and its session
    finds no account on its next request."""
    user_login_stamp(user=user)


def _verified(token: str) -> RefreshToken:
    try:
        return RefreshToken(token)  # type: ignore[arg-type]
    except TokenError as exc:  # bad signature, expired, blacklisted, malformed
        raise NotAuthorized() from exc


def token_refresh(*, refresh_token: str) -> Tokens:
    old = _verified(refresh_token)
    user = (
        get_user_model()
        .objects.filter(pk=old.get(api_settings.USER_ID_CLAIM), is_active=True)
        .first()
    )
    issued_under = old.get(PASSWORD_CLAIM)
    if (
        user is None
        or not isinstance(issued_under, str)
        or not constant_time_compare(issued_under, password_mark(user.password))
    ):
        raise NotAuthorized()  # gone, or a new password since: sign in again
    app_password_id = old.get(APP_PASSWORD_CLAIM)
    if app_password_id is not None and not app_password_stands(
        user_id=user.pk, app_password_id=app_password_id
    ):
        raise NotAuthorized()  # revoked: its app must sign in again
    with transaction.atomic():
        # Locked, so that of two refreshes racing with one token only the first succeeds.
        outstanding = OutstandingToken.objects.select_for_update().filter(jti=old["jti"]).first()
        if outstanding is None or BlacklistedToken.objects.filter(token=outstanding).exists():
            raise NotAuthorized()
        BlacklistedToken.objects.create(token=outstanding)
    return _issue(user, app_password_id)


def token_logout(*, refresh_token: str) -> None:
    _verified(refresh_token).blacklist()


def user_deactivate(*, user_ids: Collection[Any], acting_user: Any) -> int:
    """Deactivate the users, except `acting_user` (a staff member locking themselves out by a
    slip of the checkbox); returns how many changed. Their refresh and access tokens are
    refused at once, by every web process (the change is announced: accounts.invalidation)."""
    leaving = [pk for pk in user_ids if pk != acting_user.pk]
    changed = get_user_model().objects.filter(pk__in=leaving).update(is_active=False)
    active_users.forget(leaving)  # update() sends no signal
    return changed


def user_activate(*, user_ids: Collection[Any]) -> int:
    """Let the users log in again; returns how many changed."""
    return get_user_model().objects.filter(pk__in=user_ids).update(is_active=True)


def staff_ensure(*, username: str) -> str | None:
    """Create the staff account `username` unless staff exist; return its generated password,
    or None when nothing was created. InvalidInput when another account has the username, in
    this case or another."""
    users = get_user_model().objects
    if users.filter(is_staff=True).exists():
        return None
    # Letters and digits only (142 bits): a leading '-' or '_' from token_urlsafe is easy to
    # lose when copying the password off a terminal by double-click.
    password = get_random_string(24)
    try:
        with transaction.atomic():
            users.create_superuser(username=username, email="", password=password)
    except IntegrityError:
        _refuse_taken_username()
    return password


def _name_checked(name: str) -> str:
    name = name.strip()
    if not name:
        raise InvalidInput("Give the app password a name", errors={"name": ["Give it a name."]})
    if len(name) > 100:
        message = "The name is too long: at most 100 characters"
        raise InvalidInput(message, errors={"name": [message + "."]})
    if any(unicodedata.category(ch) in ("Cc", "Cs") for ch in name):
        message = "The name must not contain control characters"
        raise InvalidInput(message, errors={"name": [message + "."]})
    return name


def user_lock_standing(user_id: int) -> None:
    """Lock the user's row until the transaction ends; NotAuthorized (a 401, or a page that signs
    out) when the account was deleted or deactivated meanwhile. The first step of every write to
    an account's own rows (its password, its app passwords, a login flow it allows): what staff
    or a deletion did since the request was authenticated is never written over, and no row of a
    deleted account is made."""
    users = get_user_model().objects.select_for_update(no_key=True)
    if users.filter(pk=user_id, is_active=True).values_list("pk").first() is None:
        raise NotAuthorized()


def password_set(*, user: Any, password: str) -> None:
    """The user's new password, and nothing else of the row: a whole-row save would put back
    what the request read (an account staff deactivated, demoted, renamed or deleted since)."""
    with transaction.atomic():
        user_lock_standing(user.pk)
        user.set_password(password)
        user.save(update_fields=["password"])


def app_password_create(*, user: Any, name: str) -> tuple[AppPassword, str]:
    """Make an app password named `name` for the user; returns it with the password itself,
    which is not kept and cannot be shown again."""
    name = _name_checked(name)
    limit = settings.MAX_APP_PASSWORDS
    secret = _random_symbols(_APP_LENGTH)
    try:
        with transaction.atomic():
            # Counted under the lock of the user's row, so that creations at once cannot all
            # count one short of the cap; in a statement after the lock's, since one that waited
            # for the lock would count what was committed before it waited.
            user_lock_standing(user.pk)
            if AppPassword.objects.filter(user=user).count() >= limit:
                message = (
                    f"You have {limit} app passwords, the most an account may have "
                    "(MAX_APP_PASSWORDS): revoke one first"
                )
                raise InvalidInput(message, errors={"name": [message + "."]})
            made = AppPassword.objects.create(
                user=user,
                name=name,
                digest=hashlib.sha256(secret.encode()).hexdigest(),
                created=clock.now(),
            )
    except IntegrityError:
        message = f"You already have an app password named “{name}”"
        raise InvalidInput(message, errors={"name": [message + "."]}) from None
    return made, _grouped(secret)


def app_password_revoke(*, user: Any, app_password_id: int) -> None:
    """Revoke the user's app password: the tokens and sessions of its app end at once (each
    request checks that the app password it names still stands). Another user's is not found."""
    deleted, _ = AppPassword.objects.filter(user=user, pk=app_password_id).delete()
    if not deleted:
        raise NotFound()


def _username_checked(username: str) -> str:
    """The username as an account would have it, by the rules every surface that makes one
    follows: Django's (letters, digits and @ . + - _, at most 150), and unique whatever its case.
    InvalidInput naming what is wrong."""
    model = get_user_model()
    username = model.normalize_username(username.strip())
    if not username:  # which the field's validators let through, as every empty value
        message = "Give a username"
        raise InvalidInput(message, errors={"username": [message + "."]})
    field = model._meta.get_field(model.USERNAME_FIELD)
    assert isinstance(field, models.Field)
    try:
        field.run_validators(username)
    except ValidationError as exc:
        raise InvalidInput(" ".join(exc.messages), errors={"username": exc.messages}) from None
    if username_taken(username=username):
        _refuse_taken_username()
    return username


def user_register(*, username: str, password: str) -> AbstractBaseUser:
    """Create an account, when registration is open. The username follows Django's rules and is
    unique whatever its case; the password goes through AUTH_PASSWORD_VALIDATORS."""
    model = get_user_model()
    username = _username_checked(username)
    candidate = model(**{model.USERNAME_FIELD: username})
    try:
        validate_password(password, user=candidate)
    except ValidationError as exc:
        raise InvalidInput(" ".join(exc.messages), errors={"password": exc.messages}) from None
    try:
        with transaction.atomic():
            return model.objects.create_user(username=username, password=password)
    except IntegrityError:  # registered a moment ago, in this case or another (accounts 0003)
        _refuse_taken_username()


OWN_PASSWORD_HERE = "Your own password is changed on your account page, not here"
OWN_ACCOUNT_STAYS_ON = "You cannot turn off your own account: another staff member can"
TICKET_STALE = (
    "This sign-in has expired, or the password was changed since: sign in again with the "
    "one-time password you were given, or ask for a new one"
)
ACCOUNT_CANNOT_SIGN_IN = "This account cannot sign in now: ask the person who runs this server"


def _one_time_password_set(user: Any) -> str:
    """Give the user a new one-time password (inside the caller's transaction); returns it. It is
    kept hashed, as any password, and cannot be shown again."""
    password = _grouped(_random_symbols(_ONE_TIME_LENGTH))
    user.set_password(password)
    user.save(update_fields=["password"])
    OneTimePassword.objects.update_or_create(
        user=user, defaults={"mark": password_mark(user.password), "created": clock.now()}
    )
    return password


def user_add(*, username: str) -> tuple[AbstractBaseUser, str]:
    """Create a member's account, as staff do on the People page: the username by the rules of
    registration, and a one-time password, returned to be handed over. It signs in on the pages
    only to choose the person's own password, and no app's API takes it."""
    username = _username_checked(username)
    try:
        with transaction.atomic():
            user = get_user_model().objects.create_user(username=username)
            return user, _one_time_password_set(user)
    except IntegrityError:  # made a moment ago, in this case or another (accounts 0003)
        _refuse_taken_username()


def _other_account_locked(user_id: Any, acting_user: Any, refusal: str) -> Any:
    """The account `user_id`, its row locked until the transaction ends, when it is not
    `acting_user`'s own (InvalidInput `refusal`); NotFound when there is none."""
    if user_id == acting_user.pk:
        raise InvalidInput(refusal, errors={"account": [refusal + "."]})
    user = get_user_model().objects.select_for_update(no_key=True).filter(pk=user_id).first()
    if user is None:
        raise NotFound()
    return user


def password_reset(*, user_id: Any, acting_user: Any) -> tuple[AbstractBaseUser, str]:
    """A new one-time password for another account, as staff give one on the People page:
    returned to be handed over, as when the account was made. The old password stops working,
    and with it every browser session of the account, and its refresh and access tokens (they
    are bound to the password); its app passwords stand, so its apps keep syncing. An account
    turned off stays off."""
    with transaction.atomic():
        user = _other_account_locked(user_id, acting_user, OWN_PASSWORD_HERE)
        return user, _one_time_password_set(user)


def password_choose(*, ticket: str, password: str) -> AbstractBaseUser:
    """The person's own password in place of the one-time one they signed in with (the ticket
    the sign-in page gave them: accounts.selectors.one_time_ticket); returns the user, to be
    signed in. Nothing changes when the ticket is not good (forged, older than TICKET_SECONDS,
    or for a password that is no longer the account's) or the account was turned off or deleted
    meanwhile (NotAuthorized, saying so), nor when the validators refuse the password or it is
    the one-time one again (InvalidInput)."""
    try:
        given = signing.loads(ticket, salt=TICKET_SALT, max_age=TICKET_SECONDS)
        user_id, mark = given["user"], given["mark"]
    except (signing.BadSignature, KeyError, TypeError):
        raise NotAuthorized(TICKET_STALE) from None
    with transaction.atomic():
        try:
            user_lock_standing(user_id)
        except NotAuthorized:
            raise NotAuthorized(ACCOUNT_CANNOT_SIGN_IN) from None
        user: Any = get_user_model().objects.get(pk=user_id)
        if not (
            isinstance(mark, str)
            and constant_time_compare(mark, password_mark(user.password))
            and password_is_one_time(user=user)
        ):
            raise NotAuthorized(TICKET_STALE)
        try:
            validate_password(password, user=user)
        except ValidationError as exc:
            raise InvalidInput(" ".join(exc.messages), errors={"password": exc.messages}) from None
        if user.check_password(password):
            message = "Choose a password of your own, not the one-time password"
            raise InvalidInput(message, errors={"password": [message + "."]})
        user.set_password(password)
        user.save(update_fields=["password"])
        OneTimePassword.objects.filter(user=user).delete()
    return user


def user_turn_off(*, user_id: Any, acting_user: Any) -> AbstractBaseUser:
    """Turn another account off, as staff do on the People page: it signs in nowhere and syncs
    through no API (user_deactivate), and everything of it is kept, to be turned on again."""
    with transaction.atomic():
        user = _other_account_locked(user_id, acting_user, OWN_ACCOUNT_STAYS_ON)
        user_deactivate(user_ids=[user.pk], acting_user=acting_user)
        # Staff's decision from now on: no link of its registration turns it on, the sweep of
        # unconfirmed registrations never removes it, and its person's sign-in does not lift
        # it as it lifts a suspension for inactivity.
        AwaitingConfirmation.objects.filter(user_id=user.pk).delete()
        Activity.objects.filter(user_id=user.pk).update(suspended=None, warned=None)
        user.is_active = False
    return user


def user_turn_on(*, user_id: Any) -> AbstractBaseUser:
    """Turn an account on again: its password, app passwords and apps' sign-ins work as before
    it was turned off (those that have not expired meanwhile)."""
    user = get_user_model().objects.filter(pk=user_id).first()
    if user is None:
        raise NotFound()
    with transaction.atomic():
        user_activate(user_ids=[user.pk])
        AwaitingConfirmation.objects.filter(user_id=user.pk).delete()
        Activity.objects.filter(user_id=user.pk).update(suspended=None, warned=None)
    user.is_active = True
    return user


def _refuse_taken_username() -> NoReturn:
    raise InvalidInput(USERNAME_TAKEN, errors={"username": [USERNAME_TAKEN + "."]}) from None
