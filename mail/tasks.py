"""Celery tasks of mail: thin wrappers that call a service."""

from celery import shared_task

from mail import services


# Not retried by Celery: a failed try stays PENDING, and the sweep tries it again (mail_send).
@shared_task(queue="celery")
def send_mail(mail_id: int) -> str:
    return services.mail_send(mail_id=mail_id)


@shared_task(queue="celery")
def sweep_mail() -> dict[str, int]:
    return services.mail_sweep()
