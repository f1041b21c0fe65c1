"""Staff views of subscriptions, with their guid and feed URL history (product.md section 12)."""

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from subscriptions.models import Subscription, SubscriptionFeed, SubscriptionGuid


class ReadOnlyInline(admin.TabularInline):
    """History is written by the services only: staff read it here."""

    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class GuidInline(ReadOnlyInline):
    model = SubscriptionGuid
    fields = ["guid", "assigned"]
    verbose_name_plural = "guid history"


class FeedInline(ReadOnlyInline):
    model = SubscriptionFeed
    fields = ["url", "assigned"]
    verbose_name_plural = "feed URL history"


class DeletedFilter(admin.SimpleListFilter):
    title = "deleted"
    parameter_name = "deleted"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [("yes", "Deleted"), ("no", "Not deleted")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() == "yes":
            return queryset.filter(deleted__isnull=False)
        if self.value() == "no":
            return queryset.filter(deleted__isnull=True)
        return queryset


@admin.register(Subscription)
class SubscriptionAdmin(admin.ModelAdmin):
    """Read-only: every change goes through the API's rules, which the admin must not bypass."""

    list_display = ["feed_url", "guid", "user", "is_subscribed", "subscription_changed", "deleted"]
    list_filter = ["is_subscribed", DeletedFilter]
    search_fields = ["feed_url", "feed_history__url", "=guid_history__guid", "user__username"]
    list_select_related = ["user"]
    readonly_fields = [
        "user",
        "guid",
        "feed_url",
        "is_subscribed",
        "subscription_changed",
        "guid_changed",
        "deleted",
        "created",
    ]
    inlines = [GuidInline, FeedInline]
    show_full_result_count = False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
