"""Each kind of mail, written when it is sent from the account as it is then: plain text and
HTML in the pages' voice (templates/mail/)."""

import unicodedata
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string
from django.urls import reverse

from accounts import activity, addresses
from mail.models import Mail


def _link(name: str, *args: str) -> str:
    """An absolute link to one of the pages, at PUBLIC_URL (which EMAIL_URL requires)."""
    return settings.PUBLIC_URL + reverse(name, args=args)


def _message(
    to: str, template: str, subject: str, context: dict[str, Any]
) -> EmailMultiAlternatives:
    context = {**context, "site_name": settings.SITE_NAME, "site_url": settings.PUBLIC_URL}
    message = EmailMultiAlternatives(
        subject=f"{settings.SITE_NAME}: {subject}",
        body=render_to_string(f"mail/{template}.txt", context),
        to=[to],
    )
    message.attach_alternative(render_to_string(f"mail/{template}.html", context), "text/html")
    return message


def _folded(address: str) -> str:
    return unicodedata.normalize("NFKC", address).casefold()


def _reset(mail: Mail) -> list[EmailMultiAlternatives]:
    """One mail to each address on record that the one asked for matches, with a link for each
    of its accounts. To the address as the account holds it, not as it was typed: a lookup that
    folds case in Unicode must not send one person's link to another's mailbox."""
    by_address: dict[str, list[tuple[str, str]]] = {}
    for user in addresses.users_by_address(mail.address):
        if _folded(user.email) != _folded(mail.address):
            continue
        uid, token = addresses.reset_link_parts(user)
        link = _link("web:password-reset-link", uid, token)
        by_address.setdefault(user.email, []).append((user.get_username(), link))
    hours = max(1, settings.PASSWORD_RESET_TIMEOUT // 3600)
    return [
        _message(to, "reset", "choose a new password", {"accounts": accounts, "hours": hours})
        for to, accounts in by_address.items()
    ]


def _confirm(mail: Mail) -> list[EmailMultiAlternatives]:
    user = mail.user
    if user is None or not addresses.confirmable(user):
        return []
    token = addresses.confirmation_token(user=user, address=mail.address, mark=mail.mark)
    context = {
        "username": user.get_username(),
        "address": mail.address,
        "link": _link("web:address-confirm", token),
        "days": max(1, settings.EMAIL_CONFIRM_TIMEOUT // 86400),
    }
    return [_message(mail.address, "confirm", "confirm your address", context)]


def _inactive(mail: Mail) -> list[EmailMultiAlternatives]:
    """The warning that an unused account is to be suspended: nothing once it was used again
    (or turned off) since the warning."""
    user = mail.user
    row = None if user is None else activity.warning_of(user)
    if user is None or row is None or row.warned is None:
        return []
    context = {
        "username": user.get_username(),
        "seen": row.seen,
        "suspended_on": row.warned + timedelta(days=settings.INACTIVE_WARNING_DAYS),
        "days": settings.INACTIVE_ACCOUNT_DAYS,
        "sign_in": _link("web:login"),
        "export": _link("web:data"),
    }
    return [_message(mail.address, "inactive", "your account is unused", context)]


def compose(mail: Mail) -> list[EmailMultiAlternatives]:
    """The messages `mail` is, as of now; none when there is nothing to say."""
    if mail.kind == Mail.Kind.RESET:
        return _reset(mail)
    if mail.kind == Mail.Kind.INACTIVE:
        return _inactive(mail)
    return _confirm(mail)
