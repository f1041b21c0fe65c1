"""Staff view of feed checks: each feed URL's last check, what it found, and why it failed."""

from urllib.parse import urlencode

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from core.admin import BigTableAdmin, ReadOnlyAdmin
from feedchecks.models import FeedCheck, FeedEpisode


@admin.register(FeedCheck)
class FeedCheckAdmin(BigTableAdmin, ReadOnlyAdmin):
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
        "title",
        "subscriptions",
        "episodes",
    ]
    show_full_result_count = False

    @admin.display(description="episodes")
    def episodes(self, check: FeedCheck) -> str:
        """The feed's episodes in the catalogue."""
        url = reverse("admin:feedchecks_feedepisode_changelist")
        return format_html(
            '<a href="{}?{}">Episodes</a>', url, urlencode({"feed__id__exact": check.pk})
        )

    @admin.display(description="subscriptions")
    def subscriptions(self, check: FeedCheck) -> str:
        """The subscriptions at or once at this URL, by the subscription admin's search."""
        url = reverse("admin:subscriptions_subscription_changelist")
        return format_html('<a href="{}?{}">Subscriptions</a>', url, urlencode({"q": check.url}))


@admin.register(FeedEpisode)
class FeedEpisodeAdmin(BigTableAdmin, ReadOnlyAdmin):
    """Read-only: each feed's episodes as its last check read them, searchable by title."""

    list_display = ["title", "published", "duration", "url", "feed"]
    list_select_related = ["feed"]
    search_fields = ["title", "=guid", "url"]
    ordering = ["-id"]
    show_full_result_count = False
    fields = readonly_fields = (
        "feed",
        "title",
        "guid",
        "url",
        "link",
        "published",
        "duration",
        "image_url",
        "item_key",
        "url_key",
        "earlier_url_key",
    )
