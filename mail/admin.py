"""Outgoing mail in the admin, for staff to see what was sent and what failed; read only."""

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from mail.models import Mail


@admin.register(Mail)
class MailAdmin(admin.ModelAdmin):
    list_display = ["created", "kind", "address", "state", "tries", "sent", "error"]
    list_filter = ["state", "kind"]
    search_fields = ["address"]
    ordering = ["-created"]
    readonly_fields = [field.name for field in Mail._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
