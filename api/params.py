"""Path and query parameters: strict parsing, and a 405 naming the parameter when it fails."""

import re
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime

from django.http import HttpRequest
from rest_framework.request import Request

from core.exceptions import InvalidInput

MAX_INTEGER = 2**63 - 1
# The largest `since` of the apps' protocols a time can hold (the last second of year 9999).
MAX_SINCE = 253_402_300_799

# Clients generated from the OPA schema, which types ids and page numbers as JSON numbers, may
# send 25.0 for 25.
_INTEGRAL = re.compile(r"0*([0-9]{1,19})(?:\.0+)?", re.ASCII)

# RFC 3339 date-time. A space stands for "+" in the offset too: an unencoded "+" in a query
# string arrives as a space, and nothing else can be meant there.
_RFC3339 = re.compile(
    r"(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}):(\d{2})(?:\.(\d+))?([Zz]|[+\- ]\d{2}:\d{2})",
    re.ASCII,
)


def bad_parameter(name: str, problem: str) -> InvalidInput:
    return InvalidInput(f"{name} {problem}", errors={name: [problem]})


def parse_integer(name: str, value: str, *, maximum: int = MAX_INTEGER) -> int:
    """A positive integer no larger than `maximum`, written in ASCII digits (25 or 25.0)."""
    match = _INTEGRAL.fullmatch(value)
    number = int(match.group(1)) if match else 0
    if number < 1:
        raise bad_parameter(name, "must be a positive integer")
    if number > maximum:
        raise bad_parameter(name, f"must be at most {maximum}")
    return number


def parse_uuid(name: str, value: str) -> uuid.UUID:
    """A UUID in any spelling uuid.UUID reads (a path's guid, for instance)."""
    try:
        return uuid.UUID(value)
    except ValueError:
        raise bad_parameter(name, "must be a UUID") from None


def parse_timestamp(name: str, value: str) -> datetime:
    """An RFC 3339 date-time, any precision and offset, as an aware UTC datetime.

    Digits past the microsecond are dropped: stored times are whole milliseconds, so "later
    than" comes out the same. A leap second (:60) is the last microsecond of its minute.
    """
    match = _RFC3339.fullmatch(value)
    if match is None:
        raise bad_parameter(name, "must be an RFC 3339 date-time, like 2023-02-23T14:00:00.000Z")
    date, hours_minutes, seconds, fraction, offset = match.groups()
    micros = (fraction or "").ljust(6, "0")[:6]
    if seconds == "60":
        seconds, micros = "59", "999999"
    offset = "+00:00" if offset in ("Z", "z") else offset.replace(" ", "+")
    try:
        parsed = datetime.fromisoformat(f"{date}T{hours_minutes}:{seconds}.{micros}{offset}")
        return parsed.astimezone(UTC)
    except (ValueError, OverflowError):
        raise bad_parameter(name, "is not a valid date-time") from None


def query_param(request: Request | HttpRequest, name: str) -> str | None:
    """The one value of a query parameter, or None; given twice it is ambiguous, so a 405. Of a
    view's request or of Django's own (the fast path's: fastpath)."""
    values = request.GET.getlist(name)
    if len(values) > 1:
        raise bad_parameter(name, "must be given at most once")
    return values[0] if values else None


def reject_unknown(request: Request | HttpRequest, known: Iterable[str]) -> None:
    """A parameter the operation does not have is a mistake worth telling (a typo of `since`
    would otherwise list everything)."""
    unknown = sorted(set(request.GET) - set(known))
    if unknown:
        raise InvalidInput(
            f"unknown query parameter {unknown[0]!r}",
            errors={name: ["Unknown query parameter."] for name in unknown},
        )


def since_param(request: Request | HttpRequest, *, required: bool = True) -> int:
    """The query's `since` in the apps' protocols (the gpodder.net API, Nextcloud's): whole seconds
    since the epoch; 0 when absent and not `required`."""
    value = query_param(request, "since")
    if value is None and not required:
        return 0
    # The length first: int() refuses a string of over 4,300 digits with an error of its own.
    if (
        value is None
        or not value.isascii()
        or not value.isdigit()
        or len(value) > len(str(MAX_SINCE))
        or int(value) > MAX_SINCE
    ):
        raise InvalidInput(
            "since must be whole seconds since the epoch (0 for everything)",
            errors={"since": ["Must be a non-negative integer."]},
        )
    return int(value)
