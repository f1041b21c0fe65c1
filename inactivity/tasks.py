"""Celery tasks of the inactivity policy: thin wrappers that call a service."""

from celery import shared_task

from inactivity import services


@shared_task(queue="celery")
def sweep_inactive_accounts() -> dict[str, int]:
    return services.inactive_accounts_sweep()
