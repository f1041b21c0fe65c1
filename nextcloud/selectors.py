"""Reading what the Nextcloud paths answer (docs/nextcloud.md)."""

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, NamedTuple

from episodes.models import EpisodeAction

# Rows read from the database at a time while an answer is streamed.
CHUNK = 1000


class ActionRow(NamedTuple):
    podcast: str
    episode: str
    action: str
    timestamp: datetime
    guid: str
    started: int | None
    position: int | None
    total: int | None


def actions_since(*, user: Any, since: int) -> Iterator[ActionRow]:
    """Every action of the user's received at or after `since` (whole seconds), oldest first,
    read CHUNK rows at a time (a server-side cursor): an answer of any length in flat memory."""
    rows = (
        EpisodeAction.objects.filter(user=user, received__gte=datetime.fromtimestamp(since, UTC))
        .order_by("received", "id")
        .values_list(*ActionRow._fields)
        .iterator(chunk_size=CHUNK)
    )
    return (ActionRow(*row) for row in rows)
