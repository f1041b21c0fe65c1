"""How an episode action finds its episode in the catalogue of its feed (docs/web.md, "Episodes
by name"): SQL over the actions' columns and the episodes feedchecks.catalogue keeps, read by the
pages, the export and the admin."""

from collections.abc import Sequence
from typing import Any

from feedchecks.models import FeedCheck, FeedEpisode
from subscriptions.models import SubscriptionFeed

_EPISODES = FeedEpisode._meta.db_table

# How an episode action finds its episode: the feed URLs of the podcast it names (every URL the
# user's own subscription to it has had; only a feed the user subscribes to is read for them, so
# a name never tells that another account follows a feed), then within their checks the item
# with the guid the action names, else the one whose enclosure's key is (or was) the action's
# episode URL's key. `{a}` is the action's table or alias: correlated subqueries, so that a page
# or an export reads actions and names in one query, on PostgreSQL and SQLite alike. Each of the
# three looks in one index of the catalogue: an OR of the two URL keys could use none, and was
# planned as a walk of every feed's episodes (bench/HISTORY.md, "the episode catalogue").
_FEEDS_OF = """
    SELECT fc.id FROM {checks} fc WHERE fc.key_digest IN (
        SELECT sf2.key_digest FROM {feeds} sf1
        JOIN {feeds} sf2 ON sf2.subscription_id = sf1.subscription_id
        WHERE sf1.user_id = {a}.user_id AND sf1.key_digest = {a}.podcast_key
    )
"""
_MATCH = """
COALESCE(
    (SELECT fe.id FROM {episodes} fe
     WHERE fe.feed_id IN ({feeds_of}) AND {a}.guid <> '' AND fe.guid = {a}.guid
     ORDER BY fe.id DESC LIMIT 1),
    (SELECT fe.id FROM {episodes} fe
     WHERE fe.feed_id IN ({feeds_of}) AND {a}.episode_key <> '' AND fe.url_key = {a}.episode_key
     ORDER BY fe.id DESC LIMIT 1),
    (SELECT fe.id FROM {episodes} fe
     WHERE fe.feed_id IN ({feeds_of}) AND fe.earlier_url_key <> ''
        AND fe.earlier_url_key = {a}.episode_key
     ORDER BY fe.id DESC LIMIT 1)
)
"""


def episode_match_sql(actions: str) -> str:
    """The SQL of a scalar expression: the id of the FeedEpisode the action in the row
    `actions` (a table name or alias of episode actions) is an action on, else NULL."""
    feeds_of = _FEEDS_OF.format(
        checks=FeedCheck._meta.db_table, feeds=SubscriptionFeed._meta.db_table, a=actions
    )
    return _MATCH.format(episodes=_EPISODES, feeds_of=feeds_of, a=actions)


def episodes_by_id(ids: Sequence[Any]) -> dict[int, FeedEpisode]:
    """The catalogue's episodes `ids` (None left out), with their feed's check, in one query."""
    wanted = {pk for pk in ids if pk is not None}
    return FeedEpisode.objects.select_related("feed").in_bulk(wanted) if wanted else {}


def episode_title_sql(actions: str) -> str:
    """The SQL of a scalar subquery: the title of the action's episode (episode_match_sql),
    else NULL."""
    return f"SELECT t.title FROM {_EPISODES} t WHERE t.id = ({episode_match_sql(actions)})"
