"""The admin as a whole: its name (SITE_NAME) in its header and titles, an account's page with
links to its rows in the other lists, which of the lists behind the overview a staff account
may open, and what it may do on the People page. Imported first of the apps' admins
(INSTALLED_APPS lists this app first), it imports the user admin it extends."""

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import admin
from django.contrib.admin.exceptions import NotRegistered
from django.contrib.auth import get_user_model
from django.db.models import Model
from django.http import HttpRequest
from django.urls import reverse
from django.utils.functional import lazy
from django.utils.html import format_html, format_html_join

from deletions.models import AccountDeletion, Deletion
from feedchecks.models import FeedCheck
from mail.models import Mail
from staff.selectors import Viewer, account_rows
from subscriptions.admin import UserSubscriptionsAdmin


def _site_name() -> str:
    return str(settings.SITE_NAME)


# Read each time a page shows it, not once now: a name set later (by a test) shows too.
site_name = lazy(_site_name, str)()
admin.site.site_header = site_name
admin.site.site_title = site_name
admin.site.index_title = "Administration"

User = get_user_model()
# subscriptions.admin, imported above, registered its user admin: this one adds the links.
admin.site.unregister(User)


@admin.register(User)
class StaffUserAdmin(UserSubscriptionsAdmin):
    """The user admin, with the account's podcasts, devices, history and deletions: each a link
    to its list filtered by the account, with how many rows it has."""

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        fieldsets = list(super().get_fieldsets(request, obj))
        if obj is None:  # the add form
            return fieldsets
        return [fieldsets[0], ("Their data", {"fields": ["their_data"]}), *fieldsets[1:]]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = list(super().get_readonly_fields(request, obj))
        return fields if obj is None else [*fields, "their_data"]

    @admin.display(description="on this service")
    def their_data(self, user: Any) -> str:
        rows = account_rows(user_id=user.pk)
        lists = [
            ("subscriptions_subscription", "Podcasts (subscriptions)", rows.subscriptions),
            ("gpodder_device", "Devices", rows.devices),
            ("episodes_episodeaction", "History (episode actions)", rows.episode_actions),
            ("deletions_deletion", "Deletions of subscriptions", rows.deletions),
            ("deletions_accountdeletion", "Deletions of the account", rows.account_deletions),
        ]
        query = urlencode({"user__id__exact": user.pk})
        links = [
            (reverse(f"admin:{name}_changelist"), query, label, str(n)) for name, label, n in lists
        ]
        items = format_html_join("", '<li><a href="{}?{}">{}</a>: {}</li>', links)
        return format_html('<ul class="their-data">{}</ul>', items)


def overview_viewer(request: HttpRequest) -> Viewer:
    """The lists behind the overview that the admin would open for `request`: each asked of its
    own admin, as the list itself asks before it answers, so that the overview is no way round
    that list's 403 (a superuser may open every one)."""

    def opens(model: type[Model]) -> bool:
        try:
            model_admin = admin.site.get_model_admin(model)
        except NotRegistered:
            return False
        return bool(model_admin.has_view_permission(request))

    return Viewer(
        accounts=opens(User),
        deletions=opens(Deletion),
        account_deletions=opens(AccountDeletion),
        feed_checks=opens(FeedCheck),
        mail=opens(Mail),
    )


@dataclass(frozen=True)
class PeopleRights:
    """What a staff account may do on the People page: what the user admin would let it do to
    the accounts (its view, add and change permissions; a superuser has all three), so that the
    page is no way round the admin's 403."""

    view: bool = False
    add: bool = False
    change: bool = False


def people_rights(request: HttpRequest) -> PeopleRights:
    model_admin = admin.site.get_model_admin(User)
    return PeopleRights(
        view=bool(model_admin.has_view_permission(request)),
        add=bool(model_admin.has_add_permission(request)),
        change=bool(model_admin.has_change_permission(request)),
    )
