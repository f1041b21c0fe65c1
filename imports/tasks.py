"""Celery task of imports: a thin wrapper that takes an id and calls the service."""

from celery import shared_task
from django.conf import settings

from imports import services


# Never retried: a run cut off leaves whole batches, and the person starts it again. Its own
# limits: the tasks' (CELERY_TASK_TIME_LIMIT, five minutes) would end a run that is still within
# IMPORT_TIMEOUT.
@shared_task(
    queue="imports",
    soft_time_limit=settings.IMPORT_TASK_SOFT_TIME_LIMIT,
    time_limit=settings.IMPORT_TASK_TIME_LIMIT,
)
def run_import(import_id: int, secret: str | None) -> None:
    services.import_run(import_id=import_id, secret=secret)
