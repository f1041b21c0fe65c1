"""Staff view of deletions, filterable by status and user, with an action to re-run them; and of
accounts' deletions."""

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from core.admin import BigTableAdmin
from deletions import services
from deletions.models import AccountDeletion, Deletion


@admin.register(Deletion)
class DeletionAdmin(BigTableAdmin):
    list_display = ["id", "user", "guid", "status", "requested", "finished", "attempts", "message"]
    list_filter = ["status", ("user", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["=guid", "user__username"]
    search_help_text = "A username or its beginning."
    # By status, through the index the sweep reads (status, last_sent).
    indexed_list_filter = ["status"]
    list_select_related = ["user"]
    readonly_fields = [field.name for field in Deletion._meta.fields]
    actions = ["retry"]

    @admin.action(description="Re-run selected failed or pending deletions")
    def retry(self, request: HttpRequest, queryset: QuerySet[Deletion]) -> None:
        # Counted before sending: deletion_retry puts each failed one back to PENDING (and an
        # in-process run may finish it), so it may no longer match the list's filter (status
        # FAILURE, say), and counting the queryset afterwards would leave it out.
        selected = queryset.count()
        ids = list(queryset.exclude(status=Deletion.Status.SUCCESS).values_list("pk", flat=True))
        sent = services.deletion_retry(deletion_ids=ids)
        skipped = selected - sent
        self.message_user(request, f"Sent {sent} deletion(s) again.", messages.SUCCESS)
        if skipped:
            self.message_user(
                request,
                f"Skipped {skipped}: already successful, or their subscription is gone or "
                "has another deletion pending.",
                messages.WARNING,
            )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(AccountDeletion)
class AccountDeletionAdmin(admin.ModelAdmin):
    """Read-only: an account's deletion is asked for by its person, on their pages."""

    list_display = ["username", "status", "requested", "finished", "attempts", "message"]
    list_filter = ["status"]
    search_fields = ["username"]
    readonly_fields = [field.name for field in AccountDeletion._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
