"""Staff's user admin: Django's (create, reset password), with actions that (de)activate users
through the account services; and a read-only list of app passwords."""

from typing import Any

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.forms import (
    AdminUserCreationForm,
    ReadOnlyPasswordHashWidget,
    UserChangeForm,
)
from django.contrib.auth.hashers import UNUSABLE_PASSWORD_PREFIX
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.db import IntegrityError
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from rest_framework_simplejwt.token_blacklist import admin as token_admin
from rest_framework_simplejwt.token_blacklist.models import BlacklistedToken, OutstandingToken

from accounts import services
from accounts.models import AppPassword
from accounts.selectors import USERNAME_TAKEN, username_taken
from core.admin import BigTableAdmin, ReadOnlyAdmin, accounts_with_prefix

User = get_user_model()

# Django's auth app registered the plain user admin first (INSTALLED_APPS order): replace it.
admin.site.unregister(User)
# Groups and per-user permissions have no use here: an account is staff, a superuser, or neither.
admin.site.unregister(Group)


class _UsernameChecked:
    """A user form refusing a username another account has in another case, in the words of
    every surface that makes accounts (Django's says "A user with that username already exists",
    and its change form lets a rename to another's case variant through)."""

    cleaned_data: dict[str, Any]
    instance: Any

    def clean_username(self) -> Any:
        username = self.cleaned_data.get("username")
        if username and username_taken(username=username, other_than=self.instance.pk):
            raise ValidationError(f"{USERNAME_TAKEN}.", code="unique")
        return username


class AccountCreationForm(_UsernameChecked, AdminUserCreationForm):
    pass


class PasswordSetWidget(ReadOnlyPasswordHashWidget):
    """Whether the account has a password, and the link to set another; not the hash's
    parameters (algorithm, memory and time costs, salt), which staff have nothing to do with."""

    def get_context(self, name: str, value: Any, attrs: Any) -> dict[str, Any]:
        context = super().get_context(name, value, attrs)
        usable = bool(value) and not value.startswith(UNUSABLE_PASSWORD_PREFIX)
        context["summary"] = [{"label": "Set" if usable else "No password set."}]
        return context


class AccountChangeForm(_UsernameChecked, UserChangeForm):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "password" in self.fields:
            self.fields["password"].widget = PasswordSetWidget()


_UNUSED = ("groups", "user_permissions")


@admin.register(User)
class AccountAdmin(BigTableAdmin, UserAdmin):
    """Deactivating stops the account: its refresh and access tokens are refused at once, by
    every web process (accounts.invalidation). Usernames are unique whatever their case."""

    add_form = AccountCreationForm
    form = AccountChangeForm
    # Django's, without groups and per-user permissions (unused: see Group above).
    fieldsets = [
        (name, {**options, "fields": [f for f in options["fields"] if f not in _UNUSED]})
        for name, options in UserAdmin.fieldsets or ()
    ]
    list_filter = ["is_staff", "is_superuser", "is_active"]
    filter_horizontal = ()
    # Written by sign-ins and by registration, not by staff (and shown as text, where Django's
    # date and time boxes come without a label each).
    readonly_fields = ["last_login", "date_joined"]
    list_display = ["username", "email", "is_active", "is_staff", "last_login"]
    actions = ["deactivate", "activate"]
    show_full_result_count = False
    search_help_text = "A username or its beginning, or an email address."
    indexed_sortable_by = ["username"]

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        """A username another account took a moment ago (after the form's check), in this case
        or another: the database's refusal (accounts migration 0003), said as the form says it."""
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except IntegrityError as exc:
            if "username" not in str(exc):
                raise
            self.message_user(request, f"{USERNAME_TAKEN}.", messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())

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
