"""Request throttles whose 429 names the limit that was hit (product.md section 11)."""

import hashlib
from typing import Any

from rest_framework import throttling
from rest_framework.exceptions import Throttled


class LimitNamingThrottle(throttling.SimpleRateThrottle):
    limit_name = "requests"

    def throttle_failure(self) -> bool:
        raise Throttled(
            wait=self.wait(),
            detail=f"Rate limit exceeded: at most {self.rate} {self.limit_name}",
        )


class UserThrottle(LimitNamingThrottle, throttling.UserRateThrottle):
    """Per user when authenticated, per client address otherwise."""

    limit_name = "requests per user"


class LoginThrottle(LimitNamingThrottle):
    """Login attempts per client address and username."""

    scope = "login"
    limit_name = "login attempts per address and username"

    def get_cache_key(self, request: Any, view: Any) -> str:
        username = request.data.get("username") if isinstance(request.data, dict) else None
        # Hashed: the name is read before validation, so it may be of any size or content.
        name = username.casefold() if isinstance(username, str) else ""
        digest = hashlib.sha256(name.encode("utf-8", "replace")).hexdigest()
        return self.cache_format % {
            "scope": self.scope,
            "ident": f"{self.get_ident(request)}:{digest}",
        }
