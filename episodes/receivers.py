"""What the episodes app does when subscriptions tell it something (connected in apps.py)."""

from typing import Any

from episodes.services import actions_delete_of_subscriptions


def delete_actions_of_deleted(
    sender: Any, *, user_id: int, subscription_ids: list[int], **kwargs: Any
) -> None:
    """subscriptions.signals.subscriptions_deleted: their episode actions go with them, in the
    same transaction (so a deletion that is rolled back keeps them)."""
    actions_delete_of_subscriptions(user_id=user_id, subscription_ids=subscription_ids)
