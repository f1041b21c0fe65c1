"""Staff view of deletions, filterable by status and user."""

from django.contrib import admin
from django.http import HttpRequest

from deletions.models import Deletion


@admin.register(Deletion)
class DeletionAdmin(admin.ModelAdmin):
    list_display = ["id", "user", "guid", "status", "requested", "finished", "attempts"]
    list_filter = ["status", ("user", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["=guid", "user__username", "=id"]
    list_select_related = ["user"]
    readonly_fields = [f.name for f in Deletion._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
