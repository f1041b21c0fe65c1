"""What every page's template knows: which section of the site it belongs to (the menu marks
it as the current page)."""

from typing import Any

from django.http import HttpRequest

_SECTIONS = {
    "podcasts": "podcasts",
    "podcast": "podcasts",
    "deletion": "podcasts",
    "devices": "devices",
    "device": "devices",
    "history": "history",
    "data": "data",
    "import": "data",
    "account-delete": "data",
    "account": "account",
    "password": "account",
    "app-password-create": "account",
}


def section(request: HttpRequest) -> dict[str, Any]:
    match = request.resolver_match
    if match is None or match.namespace != "web":
        return {}
    return {"section": _SECTIONS.get(match.url_name or "", "")}
