"""The episode URL key of the actions stored before 0003, a batch at a time, each batch its own
transaction: the table is never locked for the whole of it, and apps keep syncing meanwhile.
Running it again (after a rolling upgrade, for what the previous release stored meanwhile) only
fills what is still empty."""

from django.db import migrations

from subscriptions.feeds import url_key_digest

BATCH = 2000


def fill_episode_keys(apps, schema_editor):
    EpisodeAction = apps.get_model("episodes", "EpisodeAction")
    last = 0
    while True:
        batch = list(
            EpisodeAction.objects.filter(pk__gt=last, episode_key="")
            .order_by("pk")
            .only("pk", "episode")[:BATCH]
        )
        if not batch:
            return
        for action in batch:
            action.episode_key = url_key_digest(action.episode)
        EpisodeAction.objects.bulk_update(batch, ["episode_key"])
        last = batch[-1].pk


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("episodes", "0003_catalogue"),
    ]

    operations = [
        migrations.RunPython(fill_episode_keys, migrations.RunPython.noop, elidable=True),
    ]
