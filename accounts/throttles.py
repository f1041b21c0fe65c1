"""The login throttle: attempts per client address and username (docs/api.md, "Limits")."""

import hashlib
from typing import Any

from api.throttles import LimitNamingThrottle, count_request


class LoginThrottle(LimitNamingThrottle):
    """Login attempts per client address and username, each counted in Redis at once: a password
    guesser must not gain what the processes have not yet shared."""

    scope = "login"
    limit_name = "login attempts per address and username"

    def get_cache_key(self, request: Any, view: Any) -> str:
        username = request.data.get("username") if isinstance(request.data, dict) else None
        return self.key_for(request, username)

    def key_for(self, request: Any, username: object) -> str:
        # Hashed: the name is read before validation, so it may be of any size or content.
        name = username.casefold() if isinstance(username, str) else ""
        digest = hashlib.sha256(name.encode("utf-8", "replace")).hexdigest()
        return self.cache_format % {
            "scope": self.scope,
            "ident": f"{self.get_ident(request)}:{digest}",
        }


def count_login_attempt(request: Any, username: str) -> None:
    """Count a password check made outside the login endpoint (HTTP Basic) as a login attempt of
    `username` from the request's address; past THROTTLE_LOGIN_RATE, raise Throttled (429)."""
    throttle = LoginThrottle()
    if throttle.rate is None:
        return
    throttle.key = throttle.key_for(request, username)
    count, throttle.retry_after = count_request(throttle.key, throttle.duration)
    if count > throttle.num_requests:
        throttle.throttle_failure()
