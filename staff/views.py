"""The admin's overview (docs/operations.md, "The admin"): mounted under /admin/ by
config/urls.py through the admin's own check, so that only staff see it and anyone else is sent
to the admin's sign-in; of the lists it summarises, each staff account sees the rows of those
the admin would open for it (staff.admin.overview_viewer), and the counts of the rest."""

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from staff import selectors
from staff.admin import overview_viewer


def overview(request: HttpRequest) -> HttpResponse:
    context = {
        **admin.site.each_context(request),
        "title": "Overview",
        "overview": selectors.overview_read(viewer=overview_viewer(request)),
        "active_days": selectors.ACTIVE_DAYS,
    }
    return TemplateResponse(request, "staff/overview.html", context)
