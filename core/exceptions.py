"""Domain errors shared by the apps. They know nothing of HTTP: api/errors.py maps them."""

from typing import Any


class DomainError(Exception):
    """Base of every error the services raise on purpose."""

    default_message = "The request could not be completed"

    def __init__(self, message: str | None = None, *, errors: dict[str, Any] | None = None):
        self.message = message or self.default_message
        self.errors = errors
        super().__init__(self.message)


class NotAuthorized(DomainError):
    default_message = "User not authorized"


class NotFound(DomainError):
    default_message = "Resource not found"


class Gone(DomainError):
    default_message = "Subscription has been deleted"


class InvalidInput(DomainError):
    default_message = "Input could not be validated"

    def __init__(self, detail: str | None = None, *, errors: dict[str, Any] | None = None):
        """`detail` says what was wrong; the message always starts with the default one."""
        message = f"{self.default_message}: {detail}" if detail else None
        super().__init__(message, errors=errors)
