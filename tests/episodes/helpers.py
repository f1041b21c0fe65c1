"""Episode actions stored as an app's upload stores them, and as uploads would have stamped them
for histories too long to upload."""

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from episodes import services as episodes
from episodes.actions import actions_parsed
from episodes.models import EpisodeAction
from subscriptions import feeds

FEED = "https://feeds.example.com/show.xml"


def store_received(user: Any, seconds: Iterable[int], start: datetime, *, first: int = 0) -> None:
    """A download action of episode `first + i` for each i-th second, received that many
    seconds after `start`."""
    EpisodeAction.objects.bulk_create(
        EpisodeAction(
            user=user,
            podcast=FEED,
            podcast_key=feeds.feed_key_digest(FEED),
            episode=f"https://cdn.example.com/show/{first + i}.mp3",
            action="download",
            timestamp=start,
            received=start + timedelta(seconds=second),
            identity=str(first + i),
        )
        for i, second in enumerate(seconds)
    )


def upload_actions(user: Any, actions: list[dict[str, Any]]) -> None:
    """Episode actions stored as an app's upload stores them."""
    episodes.actions_upload(user=user, actions=actions_parsed(actions, limit=10_000))
