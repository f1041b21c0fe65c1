"""Each episode action's episode URL key, for finding its name in the feed's catalogue: filled
in for the actions stored before, a batch at a time."""

from django.db import migrations, models

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
    dependencies = [
        ("episodes", "0002_received_clock_count_unused"),
    ]

    operations = [
        migrations.AddField(
            model_name="episodeaction",
            name="episode_key",
            field=models.CharField(
                blank=True,
                help_text="SHA-256 of the episode URL's matching key: how its name is found in the feed.",
                max_length=64,
            ),
        ),
        migrations.RunPython(fill_episode_keys, migrations.RunPython.noop, elidable=True),
    ]
