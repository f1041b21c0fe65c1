"""Celery tasks of deletions: thin wrappers that take ids and call a service."""

from typing import Any

from celery import Task, shared_task

from core.retry import RELIABLE
from deletions import services


class DeletionTask(Task):
    def on_failure(
        self, exc: BaseException, task_id: str, args: Any, kwargs: Any, einfo: Any
    ) -> None:
        """Retries are spent (or the error was not transient): the deletion ends as FAILURE.

        Should this write fail too, the row stays PENDING and the sweep takes it up.
        """
        services.deletion_fail(deletion_id=args[0])


@shared_task(base=DeletionTask, queue="deletions", max_retries=5, **RELIABLE)
def process_deletion(deletion_id: int) -> str:
    return services.deletion_process(deletion_id=deletion_id)


@shared_task(queue="celery")
def sweep_deletions() -> dict[str, int]:
    return services.deletion_sweep()


class AccountDeletionTask(Task):
    def on_failure(
        self, exc: BaseException, task_id: str, args: Any, kwargs: Any, einfo: Any
    ) -> None:
        """Retries are spent: the account's deletion ends as FAILURE, the account active."""
        services.account_deletion_fail(deletion_id=args[0])


@shared_task(base=AccountDeletionTask, queue="deletions", max_retries=5, **RELIABLE)
def process_account_deletion(deletion_id: int) -> str:
    return services.account_deletion_process(deletion_id=deletion_id)
