"""Celery task of imports: a thin wrapper that takes an id and calls the service."""

from celery import shared_task

from imports import services


# Never retried: a run cut off leaves whole batches, and the person starts it again.
@shared_task(queue="celery")
def run_import(import_id: int, secret: str | None) -> None:
    services.import_run(import_id=import_id, secret=secret)
