"""URLs: the versioned API under /v1/, the admin, and the health check."""

from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path, re_path
from drf_spectacular.views import (
    SpectacularJSONAPIView,
    SpectacularSwaggerView,
    SpectacularYAMLAPIView,
)

from api import views
from deletions import urls as deletions
from subscriptions import urls as subscriptions

public_schema = {
    "authentication_classes": [],
    "permission_classes": views.PublicView.permission_classes,
}

# The subscriptions first: Django tries each pattern in turn, and they take most requests. The
# apps' patterns are listed here, not included: each include is one more resolver to walk.
v1: list[URLPattern | URLResolver] = [
    *subscriptions.urlpatterns,
    path("", views.IndexView.as_view(), name="index"),
    path("capabilities", views.CapabilitiesView.as_view(), name="capabilities"),
    path("auth/login", views.LoginView.as_view(), name="login"),
    path("auth/refresh", views.RefreshView.as_view(), name="refresh"),
    path("auth/logout", views.LogoutView.as_view(), name="logout"),
    path("openapi.json", SpectacularJSONAPIView.as_view(**public_schema), name="openapi-json"),
    path("openapi.yaml", SpectacularYAMLAPIView.as_view(**public_schema), name="openapi-yaml"),
    path(
        "docs/",
        SpectacularSwaggerView.as_view(url_name="openapi-json", **public_schema),
        name="docs",
    ),
    *deletions.urlpatterns,
    re_path(r"^.*$", views.NotFoundView.as_view()),
]

urlpatterns = [
    path("v1/", include(v1)),
    path("admin/", admin.site.urls),
    path("health", views.health, name="health"),
]

handler400 = "api.errors.bad_request"
handler403 = "api.errors.permission_denied"
handler500 = "api.errors.server_error"
