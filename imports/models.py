"""An import of a person's history, its progress and what it did (docs/imports.md); and the
file it reads, kept in the database until the import has read it, so that a worker on any host
can."""

from datetime import datetime, timedelta

from django.conf import settings
from django.db import models

from core import clock

# An import under way that has told nothing for IMPORT_TIMEOUT and this long has stopped.
STALLED_AFTER = timedelta(minutes=2)


class Import(models.Model):
    class Source(models.TextChoices):
        SERVER = "server"
        FILE = "file"

    class State(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="imports"
    )
    source = models.CharField(max_length=6, choices=Source.choices)
    # The server's address (never a username or a password), or the file's name.
    origin = models.CharField(max_length=2048)
    # What was read, in words, once known: "the gpodder API at gpodder.net", ...
    described = models.CharField(max_length=300, blank=True)
    state = models.CharField(max_length=7, choices=State.choices, default=State.QUEUED)
    error = models.TextField(blank=True)
    created = models.DateTimeField()
    started = models.DateTimeField(null=True, blank=True)
    # When it last told its progress: one running that has not for long has stopped.
    updated = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)
    # Progress, then the summary.
    action_count = models.PositiveIntegerField(default=0)
    actions_read = models.PositiveIntegerField(default=0)
    devices = models.PositiveIntegerField(default=0)
    podcasts_added = models.PositiveIntegerField(default=0)
    podcasts_merged = models.PositiveIntegerField(default=0)
    podcasts_already = models.PositiveIntegerField(default=0)
    actions_imported = models.PositiveIntegerField(default=0)
    actions_already = models.PositiveIntegerField(default=0)
    refused = models.PositiveIntegerField(default=0)
    refusals = models.JSONField(default=list, blank=True)  # [{"what": ..., "reason": ...}]

    class Meta:
        indexes = [models.Index(fields=["user", "-created"], name="import_user_created")]
        constraints = [
            # One import of a person's at a time, whatever two requests at once try.
            models.UniqueConstraint(
                fields=["user"],
                condition=models.Q(state__in=["queued", "running"]),
                name="import_one_under_way_per_user",
            )
        ]

    def __str__(self) -> str:
        return f"{self.user_id}: {self.origin} ({self.state})"

    UNDER_WAY = (State.QUEUED, State.RUNNING)
    STALLED = (
        "the import stopped midway (its worker ended): start it again, it adds what is missing"
    )

    @property
    def running(self) -> bool:
        return self.state in self.UNDER_WAY

    @property
    def counted(self) -> bool:
        """Whether its counts say anything: a failed import that read nothing has none to show."""
        return self.state != self.State.FAILED or any(
            (self.devices, self.podcasts_added, self.podcasts_merged, self.podcasts_already,
             self.actions_imported, self.actions_already, self.refused)
        )  # fmt: skip

    @staticmethod
    def stalled_before(now: datetime) -> datetime:
        """An import under way that last told its progress before this has stopped: no run
        reads a server for longer than IMPORT_TIMEOUT without a word."""
        return now - timedelta(seconds=settings.IMPORT_TIMEOUT) - STALLED_AFTER

    @property
    def stalled(self) -> bool:
        """Whether it is under way in name only (its worker gone)."""
        last = self.updated or self.created
        return self.running and last < self.stalled_before(clock.now())


class ImportChunk(models.Model):
    """A piece of an import's file, in order: the file, whole, is what the import reads."""

    upload = models.ForeignKey(Import, on_delete=models.CASCADE, related_name="chunks")
    seq = models.PositiveIntegerField()
    data = models.BinaryField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["upload", "seq"], name="importchunk_upload_seq")
        ]

    def __str__(self) -> str:
        return f"{self.upload_id}: {self.seq}"
