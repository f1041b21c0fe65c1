"""Filters of the overview's template."""

from django import template
from django.utils.html import format_html

from core.admin import shortened

register = template.Library()


@register.filter
def thousands(value: int) -> str:
    return f"{value:,}"


@register.filter(name="shortened")
def shortened_filter(value: str, limit: int = 48) -> str:
    """A long URL cut in its middle (core.admin.shortened); the page gives it whole in a title."""
    return shortened(str(value), int(limit))


@register.simple_tag
def linked(url: str, text: object, query: str = "") -> str:
    """`text` as a link to `url` (and its `query`), or as text where `url` is empty: the
    template leaves it so for a list its reader may not open, whose link would answer 403."""
    if not url:
        return str(text)  # escaped by simple_tag, as any value it returns
    return format_html('<a href="{}{}">{}</a>', url, f"?{query}" if query else "", text)
