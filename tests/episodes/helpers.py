"""Episode actions stored as an app's upload stores them, and as uploads would have stamped them
for histories too long to upload."""

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.db import connection
from django.db.models.expressions import DatabaseDefault

from episodes import services as episodes
from episodes.actions import actions_parsed
from episodes.models import EpisodeAction
from subscriptions import feeds

FEED = "https://feeds.example.com/show.xml"


def store_received(user: Any, seconds: Iterable[int], start: datetime, *, first: int = 0) -> None:
    """A download action of episode `first + i` for each i-th second, received that many
    seconds after `start`."""
    actions = [
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
    ]
    if connection.vendor != "postgresql" or not actions:
        EpisodeAction.objects.bulk_create(actions)
        return
    # COPY of the columns bulk_create would set (the others take the database's defaults): its
    # INSERTs of thousands of rows' parameters took 20,000 actions about 10 s of CPU to build
    # and to parse.
    fields = [
        field
        for field in EpisodeAction._meta.concrete_fields
        if not field.primary_key
        and not isinstance(getattr(actions[0], field.attname, None), DatabaseDefault)
    ]
    columns = ", ".join(connection.ops.quote_name(str(field.column)) for field in fields)
    table = connection.ops.quote_name(EpisodeAction._meta.db_table)
    with (
        connection.cursor() as cursor,
        cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy,
    ):
        for action in actions:
            copy.write_row(
                [
                    field.get_db_prep_save(field.pre_save(action, True), connection)
                    for field in fields
                ]
            )


def upload_actions(user: Any, actions: list[dict[str, Any]]) -> None:
    """Episode actions stored as an app's upload stores them."""
    episodes.actions_upload(user=user, actions=actions_parsed(actions, limit=10_000))
