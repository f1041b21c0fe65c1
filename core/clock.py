"""The service's clock: UTC, truncated to the milliseconds the API shows (docs/api.md,
"Identifiers, URLs and timestamps")."""

from datetime import datetime

from django.utils import timezone


def now() -> datetime:
    value = timezone.now()
    return value.replace(microsecond=value.microsecond // 1000 * 1000)
