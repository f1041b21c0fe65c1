"""Response shapes of /v1/deletions."""

from typing import Any

from rest_framework import serializers

from deletions.models import Deletion
from deletions.services import RECEIVED

DEFAULT_MESSAGES = {
    Deletion.Status.PENDING: "Deletion is pending",
    Deletion.Status.SUCCESS: "Subscription deleted successfully",
    Deletion.Status.FAILURE: "The deletion process encountered an error and was rolled back",
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
