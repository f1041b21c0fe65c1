"""Each feed's episodes as its last successful check read them (FeedEpisode): what the episode
actions are named from (docs/web.md, "Episodes by name")."""

import json
from collections.abc import Sequence

from django.db import connection, transaction

from core.db import sql
from feedchecks.models import FeedEpisode
from feedchecks.parsing import FeedItem

_TABLE = FeedEpisode._meta.db_table
# The columns a check writes, in the order of FeedItem's values below.
_ITEM_COLUMNS = (
    "item_key",
    "guid",
    "title",
    "url",
    "url_key",
    "link",
    "published",
    "duration",
    "image_url",
)
_CHANGEABLE = [name for name in _ITEM_COLUMNS if name not in ("item_key", "url_key")]
_SET = ", ".join(f"{name} = excluded.{name}" for name in [*_CHANGEABLE, "url_key"])
# The URL before the feed changed it, for the actions sent under it (none kept for "no URL").
_SET_EARLIER = (
    "earlier_url_key = CASE WHEN e.url_key <> excluded.url_key AND e.url_key <> ''"
    " THEN e.url_key ELSE e.earlier_url_key END"
)
# Only an item the feed changed is written again: a check of an unchanged feed writes no row.
# (SQLite before 3.39 has no IS DISTINCT FROM; its IS NOT is the same test.)
_CHANGED = (
    f"({', '.join(f'e.{name}' for name in _CHANGEABLE)}) {{distinct}}"
    f" ({', '.join(f'excluded.{name}' for name in _CHANGEABLE)})"
)
_NEWEST = "published DESC NULLS LAST"

# PostgreSQL: one statement whatever the number of items. The items, then which of them and
# of the rows kept so far are the newest `kept`; those items written, the other rows deleted.
_STORE_POSTGRESQL = f"""
WITH items AS (
    SELECT * FROM unnest(
        %b::text[], %b::text[], %b::text[], %b::text[], %b::text[], %b::text[],
        %b::timestamptz[], %b::integer[], %b::text[], %b::integer[]
    ) AS i({", ".join(_ITEM_COLUMNS)}, place)
), kept AS (
    SELECT item_key FROM (
        SELECT item_key, published, 0 AS earlier, place FROM items
        UNION ALL
        SELECT item_key, published, 1, 0 FROM {_TABLE}
        WHERE feed_id = %s AND item_key NOT IN (SELECT item_key FROM items)
    ) AS every
    ORDER BY {_NEWEST}, earlier, place LIMIT %s
), stored AS (
    INSERT INTO {_TABLE} AS e (feed_id, {", ".join(_ITEM_COLUMNS)}, earlier_url_key)
    SELECT %s, {", ".join(_ITEM_COLUMNS)}, '' FROM items
    WHERE item_key IN (SELECT item_key FROM kept)
    ON CONFLICT (feed_id, item_key) DO UPDATE SET {_SET_EARLIER}, {_SET}
    WHERE {_CHANGED.format(distinct="IS DISTINCT FROM")}
    RETURNING 1
), pruned AS (
    DELETE FROM {_TABLE} WHERE feed_id = %s AND item_key NOT IN (SELECT item_key FROM kept)
    RETURNING 1
)
SELECT (SELECT count(*) FROM stored), (SELECT count(*) FROM pruned)
"""

# SQLite (the embedded default) has no writes within a WITH: the items, then the rows past the
# newest `kept`, in one transaction.
_STORE_SQLITE = f"""
INSERT INTO {_TABLE} AS e (feed_id, {", ".join(_ITEM_COLUMNS)}, earlier_url_key)
SELECT %s, {", ".join(f"json_extract(value, '$[{i}]')" for i in range(len(_ITEM_COLUMNS)))}, ''
FROM json_each(%s) WHERE true
ON CONFLICT (feed_id, item_key) DO UPDATE SET {_SET_EARLIER}, {_SET}
WHERE {_CHANGED.format(distinct="IS NOT")}
"""
# The newest `kept`, as on PostgreSQL: by date, then this check's items (in the feed's order)
# before those kept from earlier checks.
_PRUNE_SQLITE = f"""
DELETE FROM {_TABLE} WHERE feed_id = %s AND id NOT IN (
    SELECT e.id FROM {_TABLE} e LEFT JOIN (
        SELECT value AS item_key, key AS place FROM json_each(%s)
    ) AS now USING (item_key)
    WHERE e.feed_id = %s ORDER BY {_NEWEST}, now.place IS NULL, now.place, e.id DESC LIMIT %s
)
"""


def catalogue_store(*, feed_id: int, items: Sequence[FeedItem], kept: int) -> tuple[int, int]:
    """Keep `items` (a check's reading of its feed, the newest first) as the feed's episodes:
    a new item added, a changed one changed in place, and of these and the ones kept from
    earlier checks only the newest `kept`. An item the feed no longer lists keeps its row
    until newer ones push it out: an action on it still finds its name. Returns how many rows
    were written (new or changed) and how many deleted."""
    if connection.vendor == "postgresql":
        columns = [[getattr(item, name) for item in items] for name in _ITEM_COLUMNS]
        [(written, pruned)] = sql.fetch(
            _STORE_POSTGRESQL,
            [*columns, list(range(len(items))), feed_id, kept, feed_id, feed_id],
            sql.Columns(None, None),
        )
        return written, pruned
    published = FeedEpisode._meta.get_field("published")
    rows = [
        [
            sql.param(published, value) if name == "published" else value
            for name in _ITEM_COLUMNS
            for value in [getattr(item, name)]
        ]
        for item in items
    ]
    written = 0
    with transaction.atomic(), connection.cursor() as cursor:
        if rows:
            cursor.execute(_STORE_SQLITE, [feed_id, json.dumps(rows)])
            written = cursor.rowcount
        keys = json.dumps([item.item_key for item in items])
        cursor.execute(_PRUNE_SQLITE, [feed_id, keys, feed_id, kept])
        return written, cursor.rowcount
