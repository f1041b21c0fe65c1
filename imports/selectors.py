"""Reading a person's imports: only their own."""

from typing import Any

from core.exceptions import NotFound
from imports.models import Import

# The imports "Your data" lists.
SHOWN = 5


def imports_of(*, user: Any) -> list[Import]:
    """The person's latest imports, newest first."""
    return [
        _marked(found) for found in Import.objects.filter(user=user).order_by("-created")[:SHOWN]
    ]


def import_of(*, user: Any, import_id: int) -> Import:
    """One of the person's imports; NotFound for another's, or none."""
    found = Import.objects.filter(user=user, pk=import_id).first()
    if found is None:
        raise NotFound()
    return _marked(found)


def _marked(found: Import) -> Import:
    """An import whose worker is gone shows as stopped, not as running for ever."""
    if found.stalled:
        found.state = Import.State.FAILED
        found.error = Import.STALLED
    return found
