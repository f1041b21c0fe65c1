"""Staff view of the episode actions apps uploaded: read-only, newest first."""

from django.contrib import admin

from core.admin import ReadOnlyAdmin
from episodes.models import EpisodeAction


@admin.register(EpisodeAction)
class EpisodeActionAdmin(ReadOnlyAdmin):
    """Read-only: actions are what the apps said; searchable by podcast URL, episode and user."""

    list_display = ["received", "user", "device", "action", "podcast", "episode", "position"]
    list_filter = ["action"]
    search_fields = ["podcast", "episode", "=user__username"]
    list_select_related = ["user", "device"]
    # Newest first by id, which the primary key's index reads backwards: received has no index
    # across users.
    ordering = ["-id"]
    show_full_result_count = False
    fields = readonly_fields = (
        "user",
        "device",
        "podcast",
        "episode",
        "guid",
        "action",
        "timestamp",
        "received",
        "started",
        "position",
        "total",
    )
