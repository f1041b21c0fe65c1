"""Staff view of the devices gpodder apps named, with their last use."""

from django.contrib import admin
from django.http import HttpRequest

from core.admin import BigTableAdmin
from gpodder.models import Device


@admin.register(Device)
class DeviceAdmin(BigTableAdmin):
    """Read-only: devices are created and named by the apps."""

    list_display = ["device_id", "user", "caption", "type", "last_used", "created"]
    list_filter = ["type"]
    search_fields = ["device_id", "caption", "user__username"]
    search_help_text = "A username or its beginning."
    list_select_related = ["user"]
    readonly_fields = ["user", "device_id", "caption", "type", "created", "last_used"]
    show_full_result_count = False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
