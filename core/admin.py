"""What the apps' admins share."""

from collections.abc import Sequence
from typing import Any

from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.contrib.auth import get_user_model
from django.core.paginator import Paginator
from django.db import connection
from django.db.models import Model, Q, QuerySet
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
    says that many). Either way the pages end at the COUNT_CAP-th row: a page further on would
    make PostgreSQL walk past every row before it (OFFSET). Search closer instead."""

    COUNT_CAP = 10_000

    @cached_property
    def num_pages(self) -> int:
        return min(super().num_pages, max(1, -(-self.COUNT_CAP // self.per_page)))

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


def table_is_big(model: type[Model]) -> bool:
    """Past EstimatedCountPaginator.COUNT_CAP rows by PostgreSQL's estimate, or, in a table never
    analysed (a restore, a bulk load), by looking for the row after them. (Never on SQLite, the
    embedded default of a home server, which has no estimate.)"""
    if connection.vendor != "postgresql":
        return False
    cap = EstimatedCountPaginator.COUNT_CAP
    estimate = _estimated_rows(model._meta.db_table)
    if estimate < 0:
        return model._default_manager.all()[cap : cap + 1].exists()
    return estimate > cap


def rows_counted(model: type[Model]) -> tuple[int, bool]:
    """The table's rows, and whether that is their count (True) or PostgreSQL's estimate: a
    table of millions is never counted whole. Counted up to COUNT_CAP + 1 rows, where the estimate
    is below COUNT_CAP or there is none (a table never analysed: then COUNT_CAP + 1 says "more")."""
    cap = EstimatedCountPaginator.COUNT_CAP
    if connection.vendor == "postgresql":
        estimate = _estimated_rows(model._meta.db_table)
        if estimate > cap:
            return estimate, False
    counted = int(model._default_manager.all()[: cap + 1].count())
    return counted, counted <= cap  # past the cap in a table never analysed: "more than"


def shortened(text: str, limit: int = 48) -> str:
    """`text` cut to `limit` characters in its middle, where a URL has least to tell: its host
    and its end (the file's name) stay."""
    if len(text) <= limit:
        return text
    tail = limit * 2 // 5
    return f"{text[: limit - tail - 1]}\u2026{text[-tail:]}"


# A search by the beginning of a username lists the rows of this many accounts at most.
ACCOUNTS_PER_SEARCH = 100


def accounts_with_prefix(term: str) -> list[Any]:
    """The ids of the account named `term`, if any, and of others whose username starts with it
    (ACCOUNTS_PER_SEARCH in all, any of them: case counts), read first by the username's
    indexes (unique, and varchar_pattern_ops for the prefix). Given as a list of ids, the
    list's query then reads each table's index by user: joined to the users instead, PostgreSQL
    guesses how many a prefix matches, and a guess of a hundred made it scan every account in
    parallel to save the per-row work of the episode actions' titles."""
    users = get_user_model().objects
    exact = list(users.filter(username=term).values_list("pk", flat=True))
    started = users.filter(username__startswith=term).exclude(pk__in=exact)
    return exact + list(started.values_list("pk", flat=True)[: ACCOUNTS_PER_SEARCH - len(exact)])


class SortableOnlyChangeList(ChangeList):
    """Django's list, which sorts by any column named in the address (`?o=3`) even when the
    column offers no sort: here, only by those `sortable_by` names."""

    def get_ordering_field(self, field_name: Any) -> Any:
        if self.sortable_by is not None and field_name not in self.sortable_by:
            return None  # skipped, as a column with nothing to sort by
        return super().get_ordering_field(field_name)


class BigTableAdmin(admin.ModelAdmin):
    """A list of a table that grows with the accounts: pages numbered by an estimate, never by
    a count of the whole table (EstimatedCountPaginator).

    Once the table is big (table_is_big), a search or a filter that no index answers would read
    all of it, on every list page: a substring of a URL among ten million subscriptions, a rare
    action among twenty million, a sort by an unindexed column. Then the search is
    `indexed_search` (by default the accounts whose username starts with the term), the filters
    `indexed_list_filter` and the sortable columns `indexed_sortable_by` only; below that,
    Django's own search of `search_fields`, every filter and every column.
    """

    paginator = EstimatedCountPaginator
    show_full_result_count = False
    indexed_list_filter: Sequence[Any] = ()
    # Lookups an address may ask for by hand (`?user__id__exact=7`: the users' list links to
    # their rows), besides those of `indexed_list_filter`.
    indexed_lookups: Sequence[str] = ("user__id__exact",)
    # Sorting by any other column would sort the whole table: the list keeps its own order,
    # which an index reads (the primary key's, backwards, unless the admin says otherwise).
    indexed_sortable_by: Sequence[str] = ()
    user_field = "user"

    def is_big(self, request: HttpRequest) -> bool:
        """table_is_big, asked once per request: a list page asks it for its search, its
        filters, each lookup of the address and its sorts."""
        known = request.__dict__.setdefault("_big_tables", {})
        if self.model not in known:
            known[self.model] = table_is_big(self.model)
        return bool(known[self.model])

    def indexed_search(self, term: str) -> Q | None:
        """What the term finds through an index (None: nothing): by default the rows of the
        accounts whose username starts with it (accounts_with_prefix)."""
        return Q(**{f"{self.user_field}__in": accounts_with_prefix(term)})

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        if not self.is_big(request):
            return super().get_search_results(request, queryset, search_term)
        term = search_term.strip()
        if not term:
            return queryset, False
        found = self.indexed_search(term)
        return (queryset.none() if found is None else queryset.filter(found)), False

    def get_list_filter(self, request: HttpRequest) -> Any:
        if self.is_big(request):
            return self.indexed_list_filter
        return super().get_list_filter(request)

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return SortableOnlyChangeList

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest) -> bool:
        """On a big table, only the lookups an index answers, even typed into the address:
        Django allows any of the model's own fields (`?podcast__icontains=` would read all)."""
        if self.is_big(request):
            allowed = {*self.indexed_lookups, *(f"{name}__exact" for name in
                       self.indexed_list_filter if isinstance(name, str))}  # fmt: skip
            return lookup in allowed
        return super().lookup_allowed(lookup, value, request)

    def get_sortable_by(self, request: HttpRequest) -> Any:
        if self.is_big(request):
            return self.indexed_sortable_by
        return super().get_sortable_by(request)
