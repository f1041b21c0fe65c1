"""Staff view of feed checks: each feed URL's last check, what it found, and why it failed."""

from typing import Any
from urllib.parse import urlencode

from django.contrib import admin
from django.db.models import Q
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from core.admin import BigTableAdmin, ReadOnlyAdmin
from feedchecks.models import FeedCheck, FeedEpisode
from subscriptions import feeds


@admin.register(FeedCheck)
class FeedCheckAdmin(BigTableAdmin, ReadOnlyAdmin):
    """Read-only: rows are written by the checks alone."""

    list_display = ["url", "checked", "result", "error", "guid", "new_url", "subscriptions"]
    list_filter = ["result"]
    search_fields = ["url", "new_url", "=guid"]
    search_help_text = "A feed URL (any spelling)."
    readonly_fields = [
        "url",
        "key_digest",
        "claimed",
        "checked",
        "result",
        "failure",
        "error",
        "guid",
        "new_url",
        "title",
        "subscriptions",
        "episodes",
    ]
    show_full_result_count = False

    def indexed_search(self, term: str) -> Q | None:
        return Q(key_digest=feeds.url_key_digest(term))

    def get_ordering(self, request: HttpRequest) -> Any:
        """Last checked first while the table is small; on a big one newest first, by the
        primary key (`checked` has no index: every check writes it)."""
        return ["-id"] if self.is_big(request) else super().get_ordering(request)

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
    """Read-only: each feed's episodes as its last check read them, searchable by title while
    the catalogue is small, by feed URL at any size."""

    list_display = ["title", "published", "duration", "url", "feed"]
    list_select_related = ["feed"]
    search_fields = ["title", "=guid", "url"]
    search_help_text = "A title, guid or episode URL; once the catalogue is big, the feed's URL."
    ordering = ["-id"]
    indexed_lookups = ("feed__id__exact",)  # the feed check's link to its episodes
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

    def indexed_search(self, term: str) -> Q | None:
        """A feed's episodes by the feed's URL: its check by key, then the episodes by feed."""
        return Q(feed__key_digest=feeds.url_key_digest(term))
