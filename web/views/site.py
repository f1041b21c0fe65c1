"""What the site serves beside its pages: its icon, at the address browsers and other clients
ask for whatever a page links (docs/web.md, "The site's icon")."""

import functools
from datetime import timedelta
from pathlib import Path

from django.contrib.staticfiles import finders
from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_cache_control
from django.views.decorators.http import require_GET

ICON = "web/favicon.ico"
# Kept a week: the icon changes with a release at most, and is asked for on every page a
# browser opens that does not link one (the API's documentation, a JSON answer).
ICON_KEPT = timedelta(days=7)


@functools.cache
def _icon() -> bytes:
    """The icon's bytes, read once per process from web/static (where collectstatic copies it
    from, so it is there in every layout, collected or not)."""
    return Path(str(finders.find(ICON))).read_bytes()


@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    response = HttpResponse(_icon(), content_type="image/vnd.microsoft.icon")
    patch_cache_control(response, public=True, max_age=int(ICON_KEPT.total_seconds()))
    return response
