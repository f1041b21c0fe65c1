"""Pages as the OPA lists them: {total, page, per_page, next, previous, <items>}.

DRF's page-number pagination with the OPA's names, strict parameters (a bad one is a 405 that
names it, never a silent default), and a page past the end that is empty rather than a 404.
"""

from typing import Any

from django.conf import settings
from django.core.paginator import Page, Paginator
from rest_framework import pagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param

from config.api.params import MAX_INTEGER, parse_integer, query_param


class OpaPagination(pagination.PageNumberPagination):
    page_size = 50
    page_size_query_param = "per_page"
    items_key = "results"
    page: Page[Any]
    request: Request

    @property
    def max_page_size(self) -> int:  # type: ignore[override]
        return int(settings.MAX_PAGE_SIZE)

    def paginate_queryset(self, queryset: Any, request: Request, view: Any = None) -> list[Any]:
        """Any `queryset` with count() and slicing will do."""
        self.request = request
        paginator = Paginator(queryset, self.get_page_size(request))
        number = self.get_page_number(request, paginator)
        if number <= paginator.num_pages:  # at least 1: an empty list has one empty page
            self.page = paginator.page(number)
        else:
            # The count is known by now: past the end, there is nothing to fetch.
            self.page = Page([], number, paginator)
        return list(self.page)

    def get_page_number(self, request: Request, paginator: Paginator) -> int:
        value = query_param(request, self.page_query_param)
        return 1 if value is None else parse_integer(self.page_query_param, value)

    def get_page_size(self, request: Request) -> int:
        value = query_param(request, self.page_size_query_param)
        if value is None:
            return self.page_size
        return parse_integer(self.page_size_query_param, value, maximum=self.max_page_size)

    def get_paginated_response(self, data: Any) -> Response:
        body: dict[str, Any] = {
            "total": self.page.paginator.count,
            "page": self.page.number,
            "per_page": self.page.paginator.per_page,
        }
        links = {"next": self.get_next_link(), "previous": self.get_previous_link()}
        body.update((name, link) for name, link in links.items() if link is not None)
        body[self.items_key] = data
        return Response(body)

    def get_next_link(self) -> str | None:
        if self.page.number >= self.page.paginator.num_pages:
            return None
        return self._link(self.page.number + 1)

    def get_previous_link(self) -> str | None:
        # Past the end, "previous" leads back to the last page that has items.
        if self.page.number == 1 or self.page.paginator.count == 0:
            return None
        return self._link(min(self.page.number - 1, self.page.paginator.num_pages))

    def _link(self, number: int) -> str:
        return replace_query_param(self.request.build_absolute_uri(), self.page_query_param, number)

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        link = {"type": "string", "format": "uri", "description": "Absent at this end."}
        base = "https://sync.example.com/v1/subscriptions?per_page=50&page="
        return {
            "type": "object",
            "required": ["total", "page", "per_page", self.items_key],
            "properties": {
                "total": {
                    "type": "integer",
                    "description": "Items on all pages together.",
                    "example": 120,
                },
                "page": {"type": "integer", "example": 2},
                "per_page": {"type": "integer", "example": self.page_size},
                "next": {**link, "example": f"{base}3"},
                "previous": {**link, "example": f"{base}1"},
                self.items_key: schema,
            },
        }

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        def integer(name: str, maximum: int, description: str) -> dict[str, Any]:
            return {
                "name": name,
                "in": "query",
                "required": False,
                "description": description,
                "schema": {"type": "integer", "minimum": 1, "maximum": maximum},
            }

        return [
            integer(self.page_query_param, MAX_INTEGER, "Page number; 1 if absent."),
            integer(
                self.page_size_query_param,
                self.max_page_size,
                f"Items per page; {self.page_size} if absent, at most {self.max_page_size}.",
            ),
        ]
