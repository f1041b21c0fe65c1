"""What staff see of the outgoing mail (the admin's overview)."""

from django.db.models import Count

from mail.models import Mail


def mail_counts() -> dict[str, int]:
    """The mail waiting to be sent and the mail that failed, of what is kept, in one query."""
    counted = (
        Mail.objects.filter(state__in=[Mail.State.PENDING, Mail.State.FAILED])
        .values_list("state")
        .annotate(n=Count("pk"))
    )
    counts = {Mail.State.PENDING.value: 0, Mail.State.FAILED.value: 0}
    counts.update(dict(counted.order_by()))
    return counts
