"""Pages as the OPA lists them: {total, page, per_page, next, previous, <items>}.

Page-number pagination with the OPA's names, strict parameters (a bad one is a 405 that
names it, never a silent default), and a page past the end that is empty rather than a 404. A
page and the total come from one call, so that a selector can read both in one query.
"""

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from rest_framework import pagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param

from api.params import MAX_INTEGER, parse_integer, query_param

Fetch = Callable[..., tuple[int, list[Any]]]


class OpaPagination(pagination.BasePagination):
    """Its own paginate(), not DRF's paginate_queryset(), which it does not offer."""

    page_size = 50
    page_query_param = "page"
    page_size_query_param = "per_page"
    items_key = "results"
    request: Request | HttpRequest
    total: int
    number: int
    size: int

    @property
    def max_page_size(self) -> int:
        return int(settings.MAX_PAGE_SIZE)

    def paginate(self, fetch: Fetch, request: Request | HttpRequest) -> list[Any]:
        """The asked page's items, from `fetch(offset=, limit=)` answering (total, items)."""
        self.request = request
        self.size = self.get_page_size(request)
        self.number = self.get_page_number(request)
        self.total, items = fetch(offset=(self.number - 1) * self.size, limit=self.size)
        return items

    @property
    def last_page(self) -> int:
        """The last page with items; 1 when there are none (an empty list has one empty page)."""
        return max(1, (self.total + self.size - 1) // self.size)

    def get_page_number(self, request: Request | HttpRequest) -> int:
        value = query_param(request, self.page_query_param)
        return 1 if value is None else parse_integer(self.page_query_param, value)

    def get_page_size(self, request: Request | HttpRequest) -> int:
        value = query_param(request, self.page_size_query_param)
        if value is None:
            return self.page_size
        return parse_integer(self.page_size_query_param, value, maximum=self.max_page_size)

    def get_paginated_response(self, data: Any) -> Response:
        return Response(self.paginated_body(data))

    def paginated_body(self, data: Any) -> dict[str, Any]:
        """The page's answer (the view's, through get_paginated_response, and the fast path's)."""
        body: dict[str, Any] = {"total": self.total, "page": self.number, "per_page": self.size}
        links = {"next": self.get_next_link(), "previous": self.get_previous_link()}
        body.update((name, link) for name, link in links.items() if link is not None)
        body[self.items_key] = data
        return body

    def get_next_link(self) -> str | None:
        if self.number >= self.last_page:
            return None
        return self._link(self.number + 1)

    def get_previous_link(self) -> str | None:
        # Past the end, "previous" leads back to the last page that has items.
        if self.number == 1 or self.total == 0:
            return None
        return self._link(min(self.number - 1, self.last_page))

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
