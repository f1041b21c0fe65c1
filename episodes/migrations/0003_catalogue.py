"""Each episode action's episode URL key, for finding its name in the feed's catalogue. With a
default in the database, so that the previous release's processes keep inserting during a
rolling upgrade; 0004 fills it in for the actions stored before."""

from django.db import migrations, models


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
                db_default="",
                help_text="SHA-256 of the episode URL's matching key: how its name is found in the feed.",
                max_length=64,
            ),
        ),
    ]
