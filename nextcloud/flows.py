"""Nextcloud's Login Flow v2, the way AntennaPod logs in (docs/nextcloud.md, "Logging in").

The app starts a flow and is given two tokens: one it polls with, and one in the address of a
page it opens in the phone's browser. There the person signs in and allows the app (or denies
it). The app's next poll then makes an ordinary app password named after the app, hands it over
once, and deletes the flow: the password itself is never stored anywhere, only its digest.
"""

import hashlib
import ipaddress
import logging
import re
import secrets
import string
import unicodedata
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet

from accounts.models import AppPassword
from accounts.services import app_password_create, user_lock_standing
from core import clock
from core.exceptions import InvalidInput, NotFound
from nextcloud.models import LoginFlow

logger = logging.getLogger(__name__)

# How long a flow waits for its person and its app.
FLOW_LIFETIME = timedelta(minutes=20)
# Letters and digits only: AntennaPod puts the tokens into a form body and an address without
# encoding them. 64 of the 62 symbols are 381 bits.
TOKEN_ALPHABET = string.ascii_letters + string.digits
TOKEN_LENGTH = 64
_TOKEN = re.compile(rf"[A-Za-z0-9]{{{TOKEN_LENGTH}}}")
# The app's name as shown on the page and given to its app password (at most 100 characters),
# leaving room for a " (12)" that tells two of the same app apart.
CLIENT_NAME_LENGTH = 80
UNNAMED_CLIENT = "An unnamed app"


@dataclass(frozen=True)
class StartedFlow:
    poll_token: str
    login_token: str


@dataclass(frozen=True)
class Credentials:
    """What the app is given once the flow was allowed: the account's username and the app
    password made for it (shown this once)."""

    login_name: str
    app_password: str


def _token() -> str:
    return "".join(secrets.choice(TOKEN_ALPHABET) for _ in range(TOKEN_LENGTH))


def _sha256(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _digest(token: object) -> str | None:
    """The digest a flow keeps of `token`, if it can be one of ours; None for anything else (of
    any size or content: it is never sent to the database)."""
    if not isinstance(token, str) or not _TOKEN.fullmatch(token):
        return None
    return _sha256(token)


def client_name_of(user_agent: str) -> str:
    """The name a flow goes by, from the app's User-Agent: without control, format (such as
    right-to-left overrides) or unassigned characters, spaces collapsed, at most
    CLIENT_NAME_LENGTH characters."""
    kept = "".join(ch for ch in user_agent if not unicodedata.category(ch).startswith("C"))
    name = " ".join(kept.split())[:CLIENT_NAME_LENGTH].strip()
    return name or UNNAMED_CLIENT


def _live() -> QuerySet[LoginFlow]:
    """The flows that have not expired."""
    return LoginFlow.objects.filter(created__gt=clock.now() - FLOW_LIFETIME)


def address_of(value: object) -> str | None:
    """A client address as the throttles see it, when it is one; None for anything else."""
    try:
        return str(ipaddress.ip_address(value.strip())) if isinstance(value, str) else None
    except ValueError:
        return None


def login_flow_start(*, client_name: str, address: str | None = None) -> StartedFlow:
    """Start a flow for the app named `client_name` (client_name_of), from the client `address`;
    returns its two tokens, which are kept only as digests. Deletes the flows that have expired
    meanwhile."""
    now = clock.now()
    LoginFlow.objects.filter(created__lte=now - FLOW_LIFETIME).delete()
    poll_token, login_token = _token(), _token()
    LoginFlow.objects.create(
        poll_digest=_sha256(poll_token),
        login_digest=_sha256(login_token),
        client_name=client_name_of(client_name),
        created=now,
        started_from=address_of(address),
    )
    return StartedFlow(poll_token=poll_token, login_token=login_token)


def login_flow_pending(*, login_token: str) -> LoginFlow:
    """The flow of the page at `login_token` while it waits for its person's answer; NotFound
    when there is none (unknown, expired, or already answered)."""
    digest = _digest(login_token)
    flow = None if digest is None else _live().filter(login_digest=digest, user=None).first()
    if flow is None:
        raise NotFound()
    return flow


def _room_for_one_more(user: Any) -> None:
    limit = settings.MAX_APP_PASSWORDS
    if AppPassword.objects.filter(user=user).count() >= limit:
        message = (
            f"You have {limit} app passwords, the most an account may have "
            "(MAX_APP_PASSWORDS): revoke one on your account page first"
        )
        raise InvalidInput(message)


def login_flow_grant(*, login_token: str, user: Any) -> LoginFlow:
    """The person allows the flow's app to sync with their account; its next poll collects an
    app password. NotFound when the flow is not waiting any more (answered, expired); InvalidInput
    when the account has no room for another app password."""
    flow = login_flow_pending(login_token=login_token)
    _room_for_one_more(user)
    # Only a flow nobody answered yet: of two answers at once, one wins. Only for an account
    # that still stands (NotAuthorized: deleted or deactivated since the page was asked for).
    now = clock.now()
    with transaction.atomic():
        user_lock_standing(user.pk)
        if not _live().filter(pk=flow.pk, user=None).update(user=user, granted=now):
            raise NotFound()
    flow.user, flow.granted = user, now
    return flow


def login_flow_deny(*, login_token: str) -> None:
    """The person refuses the flow's app: the flow ends, and the app's polls find nothing."""
    flow = login_flow_pending(login_token=login_token)
    LoginFlow.objects.filter(pk=flow.pk, user=None).delete()


def _free_name(user: Any, name: str) -> str:
    """`name`, or "name (2)", "name (3)", ...: the first the account has no app password by."""
    taken = set(
        AppPassword.objects.filter(user=user, name__startswith=name).values_list("name", flat=True)
    )
    number = 1
    candidate = name
    while candidate in taken:
        number += 1
        candidate = f"{name} ({number})"
    return candidate


def login_flow_poll(*, poll_token: object) -> Credentials:
    """The app's poll: once its flow was allowed, make the app password, delete the flow and
    return the credentials, once. NotFound while the flow waits, and for one denied, expired,
    collected already, or unknown.

    The flow's row is locked while its password is made: of two polls at once, the second waits
    and then finds the flow gone.
    """
    digest = _digest(poll_token)
    if digest is None:
        raise NotFound()
    # The app polls every second while its person signs in: a waiting flow costs one read.
    if not _live().filter(poll_digest=digest, user__isnull=False).exists():
        raise NotFound()
    with transaction.atomic():
        flow = (
            _live()
            .select_for_update(of=("self",))
            .select_related("user")
            .filter(poll_digest=digest, user__isnull=False)
            .first()
        )
        if flow is None:  # collected by a poll that held the lock before this one
            raise NotFound()
        user: Any = flow.user  # never None: the query asked for a granted flow
        flow.delete()  # whatever follows: no flow is collected twice
        made = _made_for(user, flow.client_name) if user.is_active else None
    if made is None:
        raise NotFound()
    return Credentials(login_name=user.get_username(), app_password=made)


def _made_for(user: Any, client_name: str) -> str | None:
    """A new app password of the user, named after the app; None when none can be made (the
    account reached MAX_APP_PASSWORDS since the person allowed the app)."""
    for _attempt in range(3):  # a name taken meanwhile, on the account page
        try:
            _, password = app_password_create(user=user, name=_free_name(user, client_name))
        except InvalidInput as exc:
            if AppPassword.objects.filter(user=user).count() >= settings.MAX_APP_PASSWORDS:
                logger.info("A Nextcloud login found no room for an app password: %s", exc)
                return None
            continue
        return password
    return None
