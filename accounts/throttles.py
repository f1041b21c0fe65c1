"""The login throttle: attempts per client address and username (docs/api.md, "Limits"), one
counter and one lockout shared by every surface that checks a password: /v1/auth/login, Basic on
the app APIs, the sign-in page (the admin's too), and the pages that ask for the password again."""

import hashlib
import logging
import math
import time
import unicodedata
from typing import Any

from django.core.cache import cache

from api.throttles import LimitNamingThrottle, count_request
from core import lazyredis

logger = logging.getLogger(__name__)


class LoginThrottle(LimitNamingThrottle):
    """Login attempts per client address and username, each counted in Redis at once: a password
    guesser must not gain what the processes have not yet shared."""

    scope = "login"
    limit_name = "login attempts per address and username"

    def key_for(self, request: Any, username: object) -> str:
        # One key for every spelling that can sign in as one account: the sign-in form strips
        # the name and reads it in NFKC (" Dave", or "dave" in fullwidth letters), so the key
        # does the same, and folds case on top. Hashed: the name is read before validation, so
        # it may be of any size or content.
        name = ""
        if isinstance(username, str):
            name = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", username).casefold())
            name = name.strip()
        digest = hashlib.sha256(name.encode("utf-8", "replace")).hexdigest()
        return self.cache_format % {
            "scope": self.scope,
            "ident": f"{self.get_ident(request)}:{digest}",
        }


def _failures(request: Any, username: str) -> tuple[LoginThrottle, str]:
    throttle = LoginThrottle()
    return throttle, f"{throttle.key_for(request, username)}:blocked"


def refuse_while_throttled(request: Any, username: str) -> None:
    """Raise Throttled (429) while `username`, from the request's address, has used up its
    login attempts (THROTTLE_LOGIN_RATE): the right password is refused too, so guessing
    gains nothing. Before every password check, on every surface."""
    throttle, blocked = _failures(request, username)
    try:
        closes = cache.get(blocked)
    except lazyredis.error():  # counted in each process while Redis is away (api.throttles)
        logger.warning("Redis did not answer: a login block could not be read", exc_info=True)
        return
    if closes is not None and closes > time.time():
        throttle.retry_after = closes - time.time()
        throttle.throttle_failure()


def count_login_attempt(request: Any, username: str) -> None:
    """Count a login attempt (any on /v1/auth/login, a wrong password elsewhere); once the
    attempts reach THROTTLE_LOGIN_RATE, refuse_while_throttled refuses until the window closes,
    on every surface: one counter and one lockout for all of them."""
    throttle, blocked = _failures(request, username)
    if throttle.rate is None:
        return
    count, retry_after = count_request(throttle.key_for(request, username), throttle.duration)
    if count >= throttle.num_requests:
        try:
            cache.set(blocked, time.time() + retry_after, timeout=math.ceil(retry_after) + 1)
        except lazyredis.error():
            logger.warning("Redis did not answer: a login block could not be kept", exc_info=True)


class RegistrationThrottle(LimitNamingThrottle):
    """Accounts made per client address (THROTTLE_REGISTRATION_RATE), for the registration page:
    one address cannot fill the database with accounts."""

    scope = "registration"
    limit_name = "registrations per address"

    def get_cache_key(self, request: Any, view: Any) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


def count_registration(request: Any) -> None:
    """Count an attempt to register from the request's address; raise Throttled (429) past
    THROTTLE_REGISTRATION_RATE."""
    RegistrationThrottle().allow_request(request, None)


class MailThrottle(LimitNamingThrottle):
    """Mail a form sends (THROTTLE_MAIL_RATE), counted per client address and again per what it
    goes to: nobody fills a mailbox, or the outgoing queue, from one address or from many."""

    scope = "mail"
    limit_name = "mail sent per address"

    def __init__(self, target: str = "") -> None:
        super().__init__()
        self.target = target

    def get_cache_key(self, request: Any, view: Any) -> str:
        if self.target:  # folded and hashed: typed by anyone, of any size
            folded = unicodedata.normalize("NFKC", self.target).casefold().strip()
            ident = "to:" + hashlib.sha256(folded.encode("utf-8", "replace")).hexdigest()
        else:
            ident = self.get_ident(request)
        return self.cache_format % {"scope": self.scope, "ident": ident}


def count_mail_request(request: Any, *targets: str) -> None:
    """Count a mail asked for from the request's address, and for each of `targets` (the
    address it goes to, the account it is for); raise Throttled (429) past THROTTLE_MAIL_RATE
    for any."""
    MailThrottle().allow_request(request, None)
    for target in targets:
        MailThrottle(target).allow_request(request, None)
