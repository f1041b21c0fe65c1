"""The episode key migrations over actions the previous schema stored (docs/web.md, "Episodes by
name"): each action gets its episode URL's key, and a previous release's insert that names no
key still works during a rolling upgrade."""

from datetime import UTC, datetime

import pytest
from django.db import connection

from subscriptions.feeds import url_key_digest
from tests.helpers import migrate

BEFORE = [("episodes", "0002_received_clock_count_unused")]
ADDED = [("episodes", "0003_catalogue")]
FILLED = [("episodes", "0004_fill_episode_keys")]


def old_action(apps, user, n, episode):
    when = datetime(2024, 1, 1, tzinfo=UTC)
    return apps.get_model("episodes", "EpisodeAction").objects.create(
        user=user,
        podcast="https://feed.example/rss",
        podcast_key="k" * 64,
        episode=episode,
        action="download",
        timestamp=when,
        received=when,
        identity=f"{n:064d}",
    )


def test_every_action_stored_before_gets_its_episode_key(back_to_latest):
    old = migrate(BEFORE)
    user = old.get_model("auth", "User").objects.create(username="migrated")
    episodes = [f"https://Media.Example:443/{n}.mp3" for n in range(4500)] + ["a guid, not a URL"]
    for n, episode in enumerate(episodes):
        old_action(old, user, n, episode)
    new = migrate(FILLED)
    keys = dict(
        new.get_model("episodes", "EpisodeAction").objects.values_list("episode", "episode_key")
    )
    assert keys == {episode: url_key_digest(episode) for episode in episodes}
    assert keys["https://Media.Example:443/7.mp3"] == url_key_digest("https://media.example/7.mp3")


@pytest.mark.postgresql
def test_an_insert_that_names_no_key_still_works_between_the_two(back_to_latest):
    """What the previous release's processes do while the new one's migrations run."""
    old = migrate(ADDED)
    user = old.get_model("auth", "User").objects.create(username="rolling")
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO episodes_episodeaction (user_id, podcast, podcast_key, episode, action,"
            " timestamp, received, guid, identity) VALUES (%s, 'https://f.example/rss', %s,"
            " 'https://m.example/1.mp3', 'download', now(), now(), '', %s)",
            [user.pk, "k" * 64, "i" * 64],
        )
    new = migrate(FILLED)
    action = new.get_model("episodes", "EpisodeAction").objects.get()
    assert action.episode_key == url_key_digest("https://m.example/1.mp3")
