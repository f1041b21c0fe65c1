"""Staff's user admin: Django's (create, reset password), with actions that (de)activate users
through the account services; and a read-only list of app passwords."""

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from rest_framework_simplejwt.token_blacklist import admin as token_admin
from rest_framework_simplejwt.token_blacklist.models import BlacklistedToken, OutstandingToken

from accounts import services
from accounts.models import AppPassword
from core.admin import BigTableAdmin, ReadOnlyAdmin, accounts_with_prefix

User = get_user_model()

# Django's auth app registered the plain user admin first (INSTALLED_APPS order): replace it.
admin.site.unregister(User)


@admin.register(User)
class AccountAdmin(BigTableAdmin, UserAdmin):
    """Deactivating stops the account: its refresh and access tokens are refused at once, by
    every web process (accounts.invalidation)."""

    list_display = ["username", "email", "is_active", "is_staff", "last_login"]
    actions = ["deactivate", "activate"]
    show_full_result_count = False
    search_help_text = "A username or its beginning, or an email address."
    indexed_sortable_by = ["username"]

    def indexed_search(self, term: str) -> Q | None:
        """An email address by the index on UPPER(email) (accounts migration 0002), else the
        accounts whose username starts with the term."""
        found = Q(pk__in=accounts_with_prefix(term))
        return found | Q(email__iexact=term) if "@" in term else found

    @admin.action(description="Deactivate selected users (they can no longer log in)")
    def deactivate(self, request: HttpRequest, queryset: QuerySet) -> None:
        selected = list(queryset.values_list("pk", flat=True))
        changed = services.user_deactivate(user_ids=selected, acting_user=request.user)
        self.message_user(
            request,
            f"Deactivated {changed} user(s). Their sessions and tokens stop working now.",
            messages.SUCCESS,
        )
        if request.user.pk in selected:
            self.message_user(
                request,
                "You were left active: staff cannot deactivate themselves.",
                messages.WARNING,
            )

    @admin.action(description="Activate selected users")
    def activate(self, request: HttpRequest, queryset: QuerySet) -> None:
        changed = services.user_activate(user_ids=list(queryset.values_list("pk", flat=True)))
        self.message_user(request, f"Activated {changed} user(s).", messages.SUCCESS)


@admin.register(AppPassword)
class AppPasswordAdmin(BigTableAdmin):
    """Read-only: people make and revoke their own app passwords; the digest is never shown."""

    list_display = ["name", "user", "created", "last_used"]
    search_fields = ["name", "user__username"]
    search_help_text = "A username or its beginning."
    list_select_related = ["user"]
    fields = ("user", "name", "created", "last_used")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


# Refresh tokens, one per sign-in of an app: simplejwt's lists, sorted by user, would sort the
# whole table on every page. Newest first instead, by the primary key, as the other big lists.
admin.site.unregister(OutstandingToken)
admin.site.unregister(BlacklistedToken)


@admin.register(OutstandingToken)
class OutstandingTokenAdmin(BigTableAdmin, ReadOnlyAdmin, token_admin.OutstandingTokenAdmin):
    ordering = ("-id",)
    search_help_text = "A username or its beginning."


# Read-only too: deleting a row of the blacklist would bring a revoked refresh token back.
@admin.register(BlacklistedToken)
class BlacklistedTokenAdmin(BigTableAdmin, ReadOnlyAdmin, token_admin.BlacklistedTokenAdmin):
    ordering = ("-id",)
    search_help_text = "A username or its beginning."
    user_field = "token__user"
