"""Staff view of imports: who imported what, from where, how it ended. Read-only: an import is
started by its person on their pages, or by staff with `manage.py import_history`."""

from django.contrib import admin
from django.http import HttpRequest

from imports.models import Import


@admin.register(Import)
class ImportAdmin(admin.ModelAdmin):
    list_display = [
        "id", "user", "source", "origin", "state", "created", "finished",
        "actions_imported", "actions_already", "refused", "error",
    ]  # fmt: skip
    list_filter = ["state", "source"]
    search_fields = ["user__username", "origin"]
    search_help_text = "A username or a server's address."
    list_select_related = ["user"]
    readonly_fields = [field.name for field in Import._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
