"""Reads of deletions."""

from collections.abc import Collection
from typing import Any

from core.exceptions import NotFound
from deletions.models import AccountDeletion, Deletion


def deletion_get(*, user: Any, deletion_id: int) -> Deletion:
    """The user's deletion; another user's is not found, exactly like a missing one."""
    deletion = Deletion.objects.filter(user=user, pk=deletion_id).first()
    if deletion is None:
        raise NotFound()
    return deletion


def deletion_pending_for(*, subscriptions: Collection[Any]) -> bool:
    """Whether a deletion of any of `subscriptions` is pending."""
    if not subscriptions:
        return False
    return Deletion.objects.filter(
        subscription__in=subscriptions, status=Deletion.Status.PENDING
    ).exists()


def account_deletion_by_key(*, key: Any) -> AccountDeletion:
    """An account's deletion by its random key (its status page)."""
    deletion = AccountDeletion.objects.filter(key=key).first()
    if deletion is None:
        raise NotFound()
    return deletion
