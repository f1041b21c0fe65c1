"""What every page's template knows: which section of the site it belongs to (the menu marks
it as the current page), and the site's name (SITE_NAME), which the admin's pages show too."""

from typing import Any

from django.conf import settings
from django.http import HttpRequest

_SECTIONS = {
    "podcasts": "podcasts",
    "podcast": "podcasts",
    "podcast-add": "podcasts",
    "podcast-delete": "podcasts",
    "deletion": "podcasts",
    "devices": "devices",
    "device": "devices",
    "device-remove": "devices",
    "history": "history",
    "history-feed": "history",
    "data": "data",
    "import": "data",
    "account-delete": "data",
    "account": "account",
    "password": "account",
    "app-password-create": "account",
    "app-password-revoke": "account",
    "connect": "account",
}


def section(request: HttpRequest) -> dict[str, Any]:
    match = request.resolver_match
    if match is None or match.namespace != "web":
        return {}
    return {"section": _SECTIONS.get(match.url_name or "", "")}


def site_name(request: HttpRequest) -> dict[str, Any]:
    return {"site_name": settings.SITE_NAME}
