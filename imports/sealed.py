"""An import's password on its way to a worker: the broker's message carries it sealed (Fernet:
AES with an HMAC) under a key derived from SECRET_KEY, which every host of a deployment shares,
and only for as long as an import may wait for a worker. It is never written to the database or
a log; the worker forgets it when the import ends."""

import base64
from typing import TYPE_CHECKING

from django.utils.crypto import salted_hmac

if TYPE_CHECKING:
    from cryptography.fernet import Fernet

# How long a sealed password opens: an import waits for a worker no longer.
SEALED_FOR = 3600


def _fernet() -> "Fernet":
    # Loaded here: only an import sent through a broker is sealed, never on the home server
    # (bench/HISTORY.md, "Footprint").
    from cryptography.fernet import Fernet

    key = salted_hmac("imports.sealed", "password", algorithm="sha256").digest()
    return Fernet(base64.urlsafe_b64encode(key))


def seal(password: str) -> str:
    return _fernet().encrypt(password.encode()).decode()


def opened(sealed: str) -> str | None:
    """The password, or None when the seal was made with another key, or too long ago."""
    from cryptography.fernet import InvalidToken

    try:
        return _fernet().decrypt(sealed.encode(), ttl=SEALED_FOR).decode()
    except (InvalidToken, ValueError):
        return None
