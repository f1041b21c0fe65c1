"""The staff's pages beside the admin's own (docs/operations.md, "The admin"): the overview and
the People page, each behind the admin's check (staff only; anyone else is sent to the admin's
sign-in). Listed in config/urls.py before the admin's URLs, which would take any path under
/admin/."""

from django.contrib import admin
from django.urls import path

from staff import views

urlpatterns = [
    path("admin/overview/", admin.site.admin_view(views.overview), name="admin-overview"),
    path("admin/people/", admin.site.admin_view(views.people), name="admin-people"),
    path("admin/people/add/", admin.site.admin_view(views.person_add), name="admin-person-add"),
    path(
        "admin/people/<int:user_id>/password/",
        admin.site.admin_view(views.person_password),
        name="admin-person-password",
    ),
    path(
        "admin/people/<int:user_id>/off/",
        admin.site.admin_view(views.person_off),
        name="admin-person-off",
    ),
    path(
        "admin/people/<int:user_id>/on/",
        admin.site.admin_view(views.person_on),
        name="admin-person-on",
    ),
    path(
        "admin/people/<int:user_id>/confirmation/",
        admin.site.admin_view(views.person_confirmation),
        name="admin-person-confirmation",
    ),
    path(
        "admin/people/<int:user_id>/factors/",
        admin.site.admin_view(views.person_factors),
        name="admin-person-factors",
    ),
]
