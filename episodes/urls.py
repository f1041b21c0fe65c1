"""The episode actions' route under /api/2/ (config/urls.py mounts it beside gpodder's)."""

from django.urls import re_path

from episodes import views
from gpodder.urls import USER

api2 = [
    re_path(
        rf"^episodes/{USER}\.json$", views.EpisodeActionsView.as_view(), name="gpodder-episodes"
    ),
]
