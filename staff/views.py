"""The admin's overview (docs/operations.md, "The admin"): mounted under /admin/ by
config/urls.py through the admin's own check, so that only staff see it and anyone else is sent
to the admin's sign-in."""

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from staff import selectors


def overview(request: HttpRequest) -> HttpResponse:
    context = {
        **admin.site.each_context(request),
        "title": "Overview",
        "overview": selectors.overview_read(),
        "active_days": selectors.ACTIVE_DAYS,
    }
    return TemplateResponse(request, "staff/overview.html", context)
