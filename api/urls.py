"""The /v1/ routes of the API itself (the index, capabilities, the OpenAPI document and its
docs), and `versioned()`, which ends a version's routes with its catch-all 404."""

from collections.abc import Sequence

from django.urls import URLPattern, URLResolver, path, re_path
from drf_spectacular.views import (
    SpectacularJSONAPIView,
    SpectacularSwaggerView,
    SpectacularYAMLAPIView,
)

from api import views

Route = URLPattern | URLResolver

PUBLIC_VIEW = {
    "authentication_classes": [],
    "permission_classes": views.PublicView.permission_classes,
}

urlpatterns: list[Route] = [
    path("", views.IndexView.as_view(), name="index"),
    path("capabilities", views.CapabilitiesView.as_view(), name="capabilities"),
    path("openapi.json", SpectacularJSONAPIView.as_view(**PUBLIC_VIEW), name="openapi-json"),
    path("openapi.yaml", SpectacularYAMLAPIView.as_view(**PUBLIC_VIEW), name="openapi-yaml"),
    path(
        "docs/",
        SpectacularSwaggerView.as_view(url_name="openapi-json", **PUBLIC_VIEW),
        name="docs",
    ),
]


def versioned(routes: Sequence[Route]) -> list[Route]:
    """`routes`, then the catch-all that answers every other path with the 404 error object.

    Django tries patterns in order, so a route listed after the catch-all would never match:
    a version's routes are given here whole, and the catch-all is always the last.
    """
    return [*routes, re_path(r"^.*$", views.NotFoundView.as_view(), name="not-found")]
