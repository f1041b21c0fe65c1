"""The doubled slash after the host that Kasts sends when its server address ends in `/`."""

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

# The Nextcloud paths' beginnings (docs/nextcloud.md, "Paths").
_NEXTCLOUD = ("/index.php/", "/apps/gpoddersync/", "/login/v2")


class DoubledSlashMiddleware:
    """Reads `//index.php/...` (any number of slashes) as `/index.php/...`, for the Nextcloud
    paths only, before anything looks at the path: no redirect (a redirected POST arrives as a
    GET with no body), and the API paths' rules (body limit, error object) apply. First in
    MIDDLEWARE."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        path_info = request.path_info
        if path_info.startswith("//"):
            single = "/" + path_info.lstrip("/")
            if single.startswith(_NEXTCLOUD):
                script_name = request.path[: len(request.path) - len(path_info)]
                request.path_info = single
                request.path = script_name + single
        return self.get_response(request)
