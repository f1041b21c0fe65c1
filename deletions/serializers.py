"""Response shapes of /v1/deletions."""

from typing import Any

from rest_framework import serializers

from deletions.models import Deletion
from deletions.services import PENDING, RECEIVED, ROLLED_BACK, SUCCEEDED

# For a row that has no message of its own.
DEFAULT_MESSAGES = {
    Deletion.Status.PENDING: PENDING,
    Deletion.Status.SUCCESS: SUCCEEDED,
    Deletion.Status.FAILURE: ROLLED_BACK,
}


class DeletionSerializer(serializers.Serializer):
    deletion_id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=Deletion.Status.choices)
    message = serializers.CharField(required=False)

    def to_representation(self, instance: Any) -> dict[str, Any]:
        return {
            "deletion_id": instance.pk,
            "status": instance.status,
            "message": instance.message or DEFAULT_MESSAGES[instance.status],
        }


class DeletionRequestedSerializer(serializers.Serializer):
    deletion_id = serializers.IntegerField()
    message = serializers.CharField()

    def to_representation(self, instance: Any) -> dict[str, Any]:
        return {"deletion_id": instance.pk, "message": RECEIVED}
