"""Staff views of subscriptions, with guid and feed URL history, and the users' subscription
counts (docs/operations.md, "Staff")."""

from typing import Any

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.db.models import Count, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpRequest

from accounts.admin import AccountAdmin
from core.admin import BigTableAdmin
from subscriptions import feeds
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
class SubscriptionAdmin(BigTableAdmin):
    """Read-only: every change goes through the API's rules, which the admin must not bypass."""

    list_display = [
        "feed_url",
        "guid",
        "user",
        "is_subscribed",
        "subscription_changed",
        "deleted",
        "last_change",
    ]
    # By user: search by username (a filter would list every user with a subscription).
    list_filter = ["is_subscribed", DeletedFilter]
    search_fields = ["feed_url", "feed_history__url", "=guid_history__guid", "user__username"]
    search_help_text = (
        "A username or its beginning, or a feed URL (on a big table: in any spelling)."
    )
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
        "changed",
    ]
    inlines = [GuidInline, FeedInline]
    show_full_result_count = False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    @admin.display(description="last change", ordering="changed")
    def last_change(self, obj: Subscription) -> Any:
        return obj.changed

    def indexed_search(self, term: str) -> Q | None:
        """A URL by its matching key in the URL histories (their index by key), which finds
        every spelling of it; anything else as a username prefix."""
        if "://" in term:
            return Q(feed_history__key_digest=feeds.url_key_digest(term))
        return super().indexed_search(term)


def _subscriptions_of_row(condition: Q | None = None) -> Coalesce:
    """How many of the listed user's subscriptions meet `condition`, counted per row: the list's
    counts (a separate query) then stay on the user table instead of joining every subscription."""
    counted = (
        Subscription.objects.filter(condition or Q(), user=OuterRef("pk"))
        .order_by()
        .values("user")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Coalesce(Subquery(counted, output_field=IntegerField()), 0)


User = get_user_model()
# accounts.admin, imported above, registered its user admin: this one adds the counts.
admin.site.unregister(User)


@admin.register(User)
class UserSubscriptionsAdmin(AccountAdmin):
    """The accounts app's user admin, with each user's subscription counts."""

    list_display = [
        *AccountAdmin.list_display[:4],
        "subscribed_count",
        "subscription_count",
        *AccountAdmin.list_display[4:],
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        # Counted in the list's one query, not one query per row.
        return (
            super()
            .get_queryset(request)
            .annotate(
                _subscriptions=_subscriptions_of_row(),
                # What the OPML export holds: subscribed and not deleted.
                _subscribed=_subscriptions_of_row(Q(is_subscribed=True, deleted__isnull=True)),
            )
        )

    @admin.display(description="subscribed", ordering="_subscribed")
    def subscribed_count(self, obj: Any) -> int:
        return int(obj._subscribed)

    @admin.display(description="subscriptions (all)", ordering="_subscriptions")
    def subscription_count(self, obj: Any) -> int:
        return int(obj._subscriptions)
