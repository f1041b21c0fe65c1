"""Filters of the overview's template."""

from django import template

from core.admin import shortened

register = template.Library()


@register.filter
def thousands(value: int) -> str:
    return f"{value:,}"


@register.filter(name="shortened")
def shortened_filter(value: str, limit: int = 48) -> str:
    """A long URL cut in its middle (core.admin.shortened); the page gives it whole in a title."""
    return shortened(str(value), int(limit))
