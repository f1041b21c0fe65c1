"""What the deletions app answers when subscriptions ask it something (connected in apps.py)."""

from typing import Any

from deletions.selectors import deletion_pending_for


def hold_while_deletion_pending(sender: Any, *, subscriptions: list[Any], **kwargs: Any) -> bool:
    """subscriptions.signals.change_held: a feed check's change waits while a deletion of one of
    the subscriptions is pending, which the change would make fail as if the user had
    re-subscribed (docs/api.md, "Deletion")."""
    return deletion_pending_for(subscriptions=subscriptions)
