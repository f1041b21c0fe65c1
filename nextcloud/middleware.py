"""What the Nextcloud paths need before Django looks at a request: the doubled slash after the
host that Kasts sends when its server address ends in `/`, and no redirect to HTTPS."""

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from api.errors import error_response

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


class NoRedirectToHttpsMiddleware:
    """Where SECURE_SSL_REDIRECT sends plain-HTTP requests to HTTPS, a Nextcloud path is
    answered a 403 naming the rule instead: OkHttp and Qt follow a redirected POST as a GET
    with no body, which would fail somewhere later, far from its cause. Before Django's
    SecurityMiddleware, after DoubledSlashMiddleware."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if (
            settings.SECURE_SSL_REDIRECT
            and request.path_info.startswith(_NEXTCLOUD)
            and not request.is_secure()
        ):
            response = error_response(
                403,
                "This server takes these paths over HTTPS only (SECURE_SSL_REDIRECT): "
                "give the app the server's https:// address",
            )
            response["Cache-Control"] = "no-store"
            return response
        return self.get_response(request)
