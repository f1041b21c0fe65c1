"""A browser's request told from an app's, on the API paths that take HTTP Basic (the gpodder and
Nextcloud APIs; docs/gpodder-api.md, "Browsers").

A browser that was once asked for Basic credentials (a 401 with `WWW-Authenticate: Basic`) keeps
them for the origin and sends them with any request to it, the ones other sites make it send
included: a form posted from another site as `text/plain` carries a JSON body and the
credentials. So a browser is never asked (api.errors), and what another site makes it send is
refused (`refuse_cross_site`). The apps (AntennaPod's OkHttp, Kasts' Qt, mygpoclient's urllib)
send no Fetch Metadata (`Sec-Fetch-*`), no `Origin`, and no `Accept` that puts HTML first.
"""

from typing import Any

from django.core.exceptions import DisallowedHost
from rest_framework import exceptions, status

# Fetch Metadata, which every browser of the last years sends with every request to an HTTPS
# origin (not over plain HTTP), and Origin, which browsers send with a cross-origin request or a
# POST, over either.
_BROWSER_HEADERS = (
    "HTTP_SEC_FETCH_SITE",
    "HTTP_SEC_FETCH_MODE",
    "HTTP_SEC_FETCH_DEST",
    "HTTP_SEC_FETCH_USER",
    "HTTP_ORIGIN",
)
# What a browser's navigation asks for first.
_PAGES = ("text/html", "application/xhtml+xml")
# A request the person made themselves (typed, bookmarked), or one of this origin's pages.
_OWN_SITE = ("same-origin", "none")


class CrossSiteRequest(exceptions.APIException):
    status_code = status.HTTP_403_FORBIDDEN
    default_detail = "Forbidden: a browser's request that another site made; these paths serve apps"


def from_browser(request: Any) -> bool:
    """Whether a browser sent the request: Fetch Metadata or an Origin, or (a navigation over plain
    HTTP, or of a browser too old for either) an `Accept` that puts a page first."""
    meta = request.META
    if any(name in meta for name in _BROWSER_HEADERS):
        return True
    first = str(meta.get("HTTP_ACCEPT", "")).split(",", 1)[0].split(";", 1)[0]
    return first.strip().lower() in _PAGES


def cross_site(request: Any) -> bool:
    """Whether another site made a browser send the request: as Sec-Fetch-Site says, or, from a
    browser that does not send it, as an Origin other than this server's says."""
    meta = request.META
    site = meta.get("HTTP_SEC_FETCH_SITE")
    if site is not None:
        return str(site).strip().lower() not in _OWN_SITE
    origin = meta.get("HTTP_ORIGIN")
    if origin is None:
        return False
    try:
        own = f"{request.scheme}://{request.get_host()}"
    except DisallowedHost:
        return True
    return str(origin).strip().lower() != own.lower()


def refuse_cross_site(request: Any) -> None:
    """Raise CrossSiteRequest (403, the error object) for a request another site made a browser
    send, before any credential it carries is looked at."""
    if cross_site(request):
        raise CrossSiteRequest()
