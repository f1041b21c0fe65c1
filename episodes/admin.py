"""Staff view of the episode actions apps uploaded: read-only, newest first, each named by its
episode's title in the feed's catalogue when a feed check has it."""

from typing import Any

from django.contrib import admin
from django.db.models import Q, QuerySet
from django.db.models.expressions import RawSQL
from django.http import HttpRequest
from django.utils.html import format_html

from core.admin import BigTableAdmin, ReadOnlyAdmin, shortened, table_is_big
from episodes.matching import episode_title_sql
from episodes.models import EpisodeAction
from feedchecks.models import FeedEpisode

# A title search looks at this many of the catalogue's episodes whose titles match.
TITLE_SEARCH_EPISODES = 500


@admin.register(EpisodeAction)
class EpisodeActionAdmin(BigTableAdmin, ReadOnlyAdmin):
    """Read-only: actions are what the apps said; searchable by podcast URL, episode, episode
    title and user."""

    # One short line a row: the episode by its title when the catalogue has it, else its URL;
    # long URLs and titles cut, each whole in the cell's title (shown on hover); a play with
    # where it stopped.
    list_display = ["when", "user", "device", "action_shown", "episode_shown", "podcast_shown"]
    list_filter = ["action"]
    search_fields = ["podcast", "episode", "=user__username"]
    search_help_text = (
        "A username or its beginning (and while the table is small, a podcast or episode URL, "
        "or an episode title)."
    )
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
        "episode_title",
        "guid",
        "action",
        "timestamp",
        "received",
        "started",
        "position",
        "total",
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[EpisodeAction]:
        table = EpisodeAction._meta.db_table
        return (
            super()
            .get_queryset(request)
            .annotate(episode_title=RawSQL(episode_title_sql(table), []))
        )

    @admin.display(description="episode title")
    def episode_title(self, action: Any) -> str:
        return getattr(action, "episode_title", None) or ""

    @admin.display(description="received", ordering="received")
    def when(self, action: EpisodeAction) -> str:
        return format_html('<span class="nowrap">{}</span>', f"{action.received:%Y-%m-%d %H:%M}")

    @admin.display(description="episode")
    def episode_shown(self, action: Any) -> str:
        title = self.episode_title(action)
        full = f"{title}\n{action.episode}" if title else action.episode
        return _cut(title or _without_scheme(action.episode), full, limit=32)

    @admin.display(description="podcast", ordering="podcast")
    def podcast_shown(self, action: EpisodeAction) -> str:
        return _cut(_without_scheme(action.podcast), action.podcast, limit=24)

    @admin.display(description="action", ordering="action")
    def action_shown(self, action: EpisodeAction) -> str:
        """The action, and where a play stopped as a player shows it (play 1:02:03)."""
        if action.position is None:
            return action.action
        hours, rest = divmod(action.position, 3600)
        minutes, seconds = divmod(rest, 60)
        at = f"{hours}:{minutes:02}:{seconds:02}" if hours else f"{minutes}:{seconds:02}"
        return format_html('<span class="nowrap">{} {}</span>', action.action, at)

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[EpisodeAction], search_term: str
    ) -> tuple[QuerySet[EpisodeAction], bool]:
        """Also the actions on episodes whose title in the catalogue holds the term: by the
        episodes' guids and URL keys (an action then shows that title, or one of a namesake
        episode of another feed)."""
        found, duplicates = super().get_search_results(request, queryset, search_term)
        term = search_term.strip()
        if not term or self.is_big(request) or table_is_big(FeedEpisode):
            # Neither the titles nor the guids and URL keys across accounts have an index.
            return found, duplicates
        episodes = FeedEpisode.objects.filter(title__icontains=term).values_list(
            "guid", "url_key", "earlier_url_key"
        )[:TITLE_SEARCH_EPISODES]
        guids: set[str] = set()
        keys: set[str] = set()
        for guid, url_key, earlier in episodes:
            guids.add(guid)
            keys.update((url_key, earlier))
        guids.discard("")
        keys.discard("")
        if not guids and not keys:
            return found, duplicates
        titled = queryset.filter(Q(guid__in=guids) | Q(episode_key__in=keys))
        return found | titled, duplicates


def _cut(shown: str, full: str, *, limit: int) -> str:
    """`shown` on one line, cut to `limit` characters, with `full` in its title."""
    return format_html('<span class="nowrap" title="{}">{}</span>', full, shortened(shown, limit))


def _without_scheme(url: str) -> str:
    """A URL as a column shows it: its scheme says nothing about which episode or feed it is."""
    return url.split("://", 1)[1] if url.startswith(("https://", "http://")) else url
