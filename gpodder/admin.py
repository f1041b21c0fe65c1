"""Staff view of the devices gpodder apps named, with their last use and their last syncs."""

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from core.admin import BigTableAdmin
from gpodder.models import Device, DeviceSyncEvent


class SyncEventInline(admin.TabularInline):
    """A device's kept sync events (docs/web.md, "Devices"), read-only: the sync requests
    write them."""

    model = DeviceSyncEvent
    fields = ("at", "kind", "data", "protocol", "agent", "count", "detail", "refused", "reason")
    readonly_fields = fields
    ordering = ["-seq"]
    extra = 0
    can_delete = False
    verbose_name = "sync event"
    verbose_name_plural = "last sync events"

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Device)
class DeviceAdmin(BigTableAdmin):
    """Read-only: devices are created and named by the apps."""

    list_display = ["device_id", "user", "caption", "type", "last_used", "created"]
    list_filter = ["type"]
    search_fields = ["device_id", "caption", "user__username"]
    search_help_text = "A username or its beginning."
    list_select_related = ["user"]
    readonly_fields = ["user", "device_id", "caption", "type", "created", "last_used"]
    inlines = [SyncEventInline]
    show_full_result_count = False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
