"""The service's clock: UTC, truncated to the milliseconds the API shows (product.md section 5)."""

from datetime import datetime

from django.utils import timezone


def now() -> datetime:
    value = timezone.now()
    return value.replace(microsecond=value.microsecond // 1000 * 1000)
