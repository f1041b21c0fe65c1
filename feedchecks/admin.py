"""Staff view of feed checks: each feed URL's last check, what it found, and why it failed."""

from urllib.parse import urlencode

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from core.admin import ReadOnlyAdmin
from feedchecks.models import FeedCheck


@admin.register(FeedCheck)
class FeedCheckAdmin(ReadOnlyAdmin):
    """Read-only: rows are written by the checks alone."""

    list_display = ["url", "checked", "result", "error", "guid", "new_url", "subscriptions"]
    list_filter = ["result"]
    search_fields = ["url", "new_url", "=guid"]
    readonly_fields = [
        "url",
        "key_digest",
        "claimed",
        "checked",
        "result",
        "error",
        "guid",
        "new_url",
        "subscriptions",
    ]
    show_full_result_count = False

    @admin.display(description="subscriptions")
    def subscriptions(self, check: FeedCheck) -> str:
        """The subscriptions at or once at this URL, by the subscription admin's search."""
        url = reverse("admin:subscriptions_subscription_changelist")
        return format_html('<a href="{}?{}">Subscriptions</a>', url, urlencode({"q": check.url}))
