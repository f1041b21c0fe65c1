"""The service's mail: queued by the request that asks for it, sent after it, tried again until
it is sent or its tries are spent (docs/public-instance.md, "Mail")."""

import logging
import smtplib
import threading
from datetime import timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from accounts import addresses
from core import clock
from mail.compose import compose
from mail.models import Mail

logger = logging.getLogger(__name__)

# Tries of one mail, the first at once and each after twice the wait before (1, 2, 4, 8 and 16
# minutes): a mail server down for half an hour loses nothing.
TRIES = 6
FIRST_WAIT = timedelta(minutes=1)
# Mail is shown to staff this long after its last try, then forgotten.
KEPT = timedelta(days=30)
# Mail the sweep hands on at a time: each may wait EMAIL_TIMEOUT for a server that does not answer.
SWEEP_BATCH = 20
# What is kept of a server's answer.
ERROR_CHARACTERS = 1000


def mail_queue(*, kind: str, address: str, user: Any = None, mark: str = "") -> Mail:
    """Queue a mail of `kind` to `address`; it goes out once the transaction commits."""
    now = clock.now()
    mail = Mail.objects.create(
        kind=kind, address=address, user=user, mark=mark, next_try=now, created=now
    )
    transaction.on_commit(partial(_dispatch, mail.pk))
    return mail


def confirmation_send(*, user: Any, address: str) -> Mail:
    """Queue the mail with a link that makes `address` the user's, confirmed."""
    mark = addresses.state_mark(user)
    return mail_queue(kind=Mail.Kind.CONFIRM, address=address, user=user, mark=mark)


def _dispatch(mail_id: int) -> None:
    """To a worker through the broker; without one (the home server), to a thread of this
    process. A broker that cannot be reached is logged: the sweep sends the mail instead."""
    if settings.MAIL_IN_THREAD:
        threading.Thread(target=_in_thread, args=(mail_id,), name="mail", daemon=True).start()
        return
    from mail.tasks import send_mail

    try:
        send_mail.delay(mail_id)
    except Exception:  # whatever the broker's client raised: the sweep sends it
        logger.warning("Could not hand mail %s to a worker; the sweep will", mail_id, exc_info=True)


def _in_thread(mail_id: int) -> None:
    try:
        mail_send(mail_id=mail_id)
    finally:
        connection.close()  # this thread's own


def _claimed(mail_id: int) -> Mail | None:
    """The mail, counted as tried now and not due again until its wait has passed, so that no
    other worker or sweep tries it meanwhile; None when it is not pending or not due."""
    now = clock.now()
    with transaction.atomic():
        mail = (
            Mail.objects.select_for_update()
            .filter(pk=mail_id, state=Mail.State.PENDING, next_try__lte=now, tries__lt=TRIES)
            .first()
        )
        if mail is None:
            return None
        mail.next_try = now + FIRST_WAIT * 2**mail.tries
        mail.tries += 1
        mail.save(update_fields=["next_try", "tries"])
    return mail


def _permanent(exc: Exception) -> bool:
    """An answer that another try would get again: the server refused the address or the mail
    for good (a 5xx), or the address cannot be written in a mail at all."""
    if isinstance(exc, ValueError):
        return True
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        return all(code >= 500 for code, _ in exc.recipients.values())
    return isinstance(exc, smtplib.SMTPResponseException) and exc.smtp_code >= 500


def _described(exc: Exception) -> str:
    """What went wrong, as staff read it: the server's answer as it gave it ("550 5.1.1 No such
    mailbox"), else the error's kind and words ("ConnectionRefusedError: ...")."""
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        return "; ".join(
            f"{code} {_text(answer)} ({address})"
            for address, (code, answer) in exc.recipients.items()
        )
    if isinstance(exc, smtplib.SMTPResponseException):
        return f"{exc.smtp_code} {_text(exc.smtp_error)}"
    return f"{type(exc).__name__}: {exc}"


def _text(answer: bytes | str) -> str:
    return answer.decode("utf-8", "replace") if isinstance(answer, bytes) else str(answer)


def mail_send(*, mail_id: int) -> str:
    """Try the mail once, if it is pending and due; returns its state after. Written when it is
    sent (mail.compose): with nothing to say (no account uses the address, or the account
    changed so that the mail is moot) it is NONE. A failure leaves it PENDING for the sweep,
    or FAILED once its tries are spent or the server refused it for good."""
    mail = _claimed(mail_id)
    if mail is None:
        return Mail.objects.filter(pk=mail_id).values_list("state", flat=True).first() or ""
    try:
        messages = compose(mail)
        for message in messages:
            message.send()
    except (smtplib.SMTPException, OSError, ValueError) as exc:
        failed = mail.tries >= TRIES or _permanent(exc)
        error = _described(exc)[:ERROR_CHARACTERS]
        Mail.objects.filter(pk=mail.pk).update(
            error=error, state=Mail.State.FAILED if failed else Mail.State.PENDING
        )
        log = logger.error if failed else logger.warning
        log("Mail %s (%s), try %s of %s: %s", mail.pk, mail.kind, mail.tries, TRIES, error)
        return Mail.State.FAILED if failed else Mail.State.PENDING
    state = Mail.State.SENT if messages else Mail.State.NONE
    Mail.objects.filter(pk=mail.pk).update(state=state, sent=clock.now(), error="")
    return state


def mail_sweep() -> dict[str, int]:
    """Celery beat's, and the home server's scheduler's: the mail whose tries are spent marked
    FAILED, the mail due again handed on, what staff have seen long enough forgotten, and the
    registrations whose confirmation link died unopened removed."""
    now = clock.now()
    spent = Mail.objects.filter(state=Mail.State.PENDING, tries__gte=TRIES, next_try__lte=now)
    failed = spent.update(state=Mail.State.FAILED)
    if failed:
        logger.error("%s mails failed: their tries are spent", failed)
    due = list(
        Mail.objects.filter(state=Mail.State.PENDING, next_try__lte=now, tries__lt=TRIES)
        .order_by("next_try")
        .values_list("pk", flat=True)[:SWEEP_BATCH]
    )
    for mail_id in due:
        _dispatch(mail_id)
    old = Mail.objects.exclude(state=Mail.State.PENDING).filter(next_try__lt=now - KEPT)
    forgotten, _ = old.delete()
    removed = addresses.unconfirmed_registrations_purge()
    return {
        "failed": failed,
        "sent_again": len(due),
        "forgotten": forgotten,
        "registrations_removed": removed,
    }
