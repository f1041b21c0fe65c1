"""URLs: the versioned API under /v1/, the gpodder API, the admin, the health check, and the
account holders' pages at the root.

Each app lists its own routes; a new /v1/ route goes into its app's urls.py, or into the list
below (docs/architecture.md, "A new endpoint").
"""

from django.conf import settings
from django.contrib import admin
from django.urls import include, path, re_path
from django.views.generic import RedirectView
from rest_framework.routers import SimpleRouter

from accounts import urls as accounts
from api import urls as api
from api.views import NotFoundView, health
from deletions import urls as deletions
from deletions.views import SubscriptionDestroyMixin
from episodes import urls as episodes
from gpodder import urls as gpodder
from nextcloud import urls as nextcloud
from staff import urls as staff
from subscriptions import urls as subscriptions
from subscriptions.views import SubscriptionViewSet
from web.views.signing import admin_sign_in


# /v1/subscriptions and /v1/subscriptions/{guid}: listed, added, read and changed by the
# subscriptions app; deleted by the deletions app, which builds on it. (No docstring: the
# OpenAPI document would show it as the description of every operation.)
class SubscriptionResource(SubscriptionDestroyMixin, SubscriptionViewSet):
    pass


router = SimpleRouter(trailing_slash=False)
router.register("subscriptions", SubscriptionResource, basename="subscription")

# The subscriptions first: Django tries each pattern in turn, and they take most requests. The
# apps' patterns are listed here, not included: each include is one more resolver to walk.
v1 = api.versioned(
    [
        *subscriptions.urlpatterns,  # before the router's, so no guid pattern takes their names
        *router.urls,
        *deletions.urlpatterns,
        *accounts.urlpatterns,
        *api.urlpatterns,
    ]
)

urlpatterns = [
    path("v1/", include(v1)),
    # The gpodder.net API over the same subscriptions (docs/gpodder-api.md).
    path("api/2/", include(api.versioned([*gpodder.api2, *episodes.api2]))),
    path("subscriptions/", include(api.versioned(gpodder.simple))),
    # Staff sign in, and change their password, on the people's pages: one form each, under
    # the login throttle every surface shares (docs/web.md).
    path("admin/login/", admin_sign_in, name="admin-sign-in"),
    path("admin/password_change/", RedirectView.as_view(pattern_name="web:account")),
    # The overview and the People page for staff (docs/operations.md, "The admin").
    *staff.urlpatterns,
    path("admin/", admin.site.urls),
    path("health", health, name="health"),
    # The Nextcloud gPodder Sync API (docs/nextcloud.md), with and without /index.php/; the
    # latter last, so reversing a name gives the /index.php/ path the apps are given.
    path("", include(nextcloud.urlpatterns)),
    # Any other path under the Nextcloud prefixes is the 404 error object, even with DEBUG on
    # (make run), where Django answers its own debug page instead of handler404.
    re_path(r"^(?:apps/gpoddersync|login/v2)/", NotFoundView.as_view()),
    path("index.php/", include(api.versioned(nextcloud.urlpatterns))),
    # The passkeys' ceremonies, posted by the pages' scripts (docs/factors.md).
    *([path("account/passkeys/", include("factors.urls"))] if settings.PASSKEYS else []),
    # The account holders' own pages (docs/web.md), last: their paths are the site's root.
    path("", include("web.urls")),
]

handler400 = "api.errors.bad_request"
handler403 = "api.errors.permission_denied"
handler404 = "api.errors.page_not_found"
handler500 = "api.errors.server_error"
