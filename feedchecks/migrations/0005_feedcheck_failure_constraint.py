"""Only a failed check names a kind of failure; the retry sweep's index of failed checks.
Apart from 0004, which fills the kinds in, so that on PostgreSQL the rows are updated and the
table altered in transactions of their own."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("feedchecks", "0004_feedcheck_failure"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="feedcheck",
            index=models.Index(
                condition=models.Q(("result", "error")),
                fields=["claimed"],
                name="feedcheck_failed_idx",
            ),
        ),
        migrations.AddConstraint(
            model_name="feedcheck",
            constraint=models.CheckConstraint(
                condition=models.Q(("result", "error"), ("failure", ""), _connector="OR"),
                name="feedcheck_failure_only_of_error",
            ),
        ),
    ]
