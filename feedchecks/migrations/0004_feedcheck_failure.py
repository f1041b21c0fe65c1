"""The kind of each failed check (FeedCheck.Failure), read from the error texts of the checks
stored before it existed; the constraint and the retry sweep's index follow in 0005."""

from django.db import migrations, models
from django.db.models import Q

# Each kind with how the fetcher and the reader began or held its text (feedchecks/fetcher.py,
# parsing.py, reader.py, services.py); the first that matches wins, and "other" takes the rest.
_KINDS = [
    ("not_found", Q(error__in=["HTTP 404", "HTTP 410"])),
    ("http_error", Q(error__startswith="HTTP ")),
    ("timed_out", Q(error__startswith="Timed out")),
    ("refused_network", Q(error__endswith="which may not be fetched")),
    ("cannot_resolve", Q(error__startswith="Cannot resolve")),
    ("cannot_connect", Q(error__startswith="Cannot connect")),
    ("tls", Q(error__startswith="SSL")),
    ("unsafe", Q(error__startswith="The feed declares")),
    ("too_complex", Q(error__startswith="The feed is too complex")),
    ("not_a_feed", Q(error__startswith="The feed could not be read")),
    ("redirects", Q(error__startswith="More than ") | Q(error__startswith="Redirect to a bad")),
]


def classify(apps, schema_editor):
    FeedCheck = apps.get_model("feedchecks", "FeedCheck")
    failed = FeedCheck.objects.filter(result="error", failure="")
    for kind, matches in _KINDS:
        failed.filter(matches).update(failure=kind)
    failed.update(failure="other")


class Migration(migrations.Migration):
    dependencies = [
        ("feedchecks", "0003_catalogue"),
    ]

    operations = [
        migrations.AddField(
            model_name="feedcheck",
            name="failure",
            field=models.CharField(
                blank=True,
                choices=[
                    ("not_found", "not found"),
                    ("http_error", "server error"),
                    ("timed_out", "timed out"),
                    ("not_a_feed", "not a feed"),
                    ("refused_network", "refused network"),
                    ("cannot_resolve", "cannot resolve"),
                    ("cannot_connect", "cannot connect"),
                    ("too_large", "too large"),
                    ("too_complex", "too complex"),
                    ("unsafe", "DTD or entities"),
                    ("tls", "TLS failure"),
                    ("redirects", "bad redirects"),
                    ("other", "other"),
                ],
                db_default="",
                default="",
                help_text="The kind of failure of the last fetch, when it failed.",
                max_length=16,
            ),
        ),
        migrations.RunPython(classify, migrations.RunPython.noop, elidable=True),
    ]
