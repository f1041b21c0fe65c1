"""What the apps' admins share."""

from typing import Any

from django.contrib import admin
from django.core.paginator import Paginator
from django.db import connection
from django.http import HttpRequest
from django.utils.functional import cached_property


class ReadOnlyAdmin(admin.ModelAdmin):
    """Staff look, and change nothing: what it shows is written by the apps and the workers."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class EstimatedCountPaginator(Paginator):
    """The admin's paginator for tables of millions of rows: counting every row of the episode
    actions, subscriptions or accounts to number the pages would read the whole table on every
    list page. Unfiltered, the count is PostgreSQL's own estimate once that is past COUNT_CAP;
    filtered (a search, a filter), rows are counted up to COUNT_CAP + 1 only (the list then
    says that many, and its last pages are out of reach: search closer)."""

    COUNT_CAP = 10_000

    @cached_property
    def count(self) -> int:
        queryset: Any = self.object_list  # the admin's list: a QuerySet
        if connection.vendor == "postgresql" and not queryset.query.where:
            estimate = _estimated_rows(queryset.model._meta.db_table)
            if estimate > self.COUNT_CAP:
                return estimate
        return int(queryset[: self.COUNT_CAP + 1].count())


def _estimated_rows(table: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples::bigint FROM pg_class WHERE oid = %s::regclass", [table])
        row = cursor.fetchone()
    return int(row[0]) if row else -1  # -1: never analysed


class BigTableAdmin(admin.ModelAdmin):
    """A list of a table that grows with the accounts: pages numbered by an estimate, never by
    a count of the whole table (EstimatedCountPaginator)."""

    paginator = EstimatedCountPaginator
    show_full_result_count = False
