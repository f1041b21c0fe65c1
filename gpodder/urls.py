"""The gpodder.net API's routes: the advanced API under /api/2/ and the simple API under
/subscriptions/ (config/urls.py mounts both, each ending with its catch-all 404)."""

from django.urls import re_path

from gpodder import views

# A username may hold dots: the name is everything up to the last dot before the format.
USER = r"(?P<username>[^/]+)"
DEVICE = r"(?P<device>[^/]+)"

api2 = [
    re_path(rf"^auth/{USER}/login\.json$", views.LoginView.as_view(), name="gpodder-login"),
    re_path(rf"^auth/{USER}/logout\.json$", views.LogoutView.as_view(), name="gpodder-logout"),
    re_path(rf"^devices/{USER}\.json$", views.DeviceListView.as_view(), name="gpodder-devices"),
    re_path(rf"^devices/{USER}/{DEVICE}\.json$", views.DeviceView.as_view(), name="gpodder-device"),
    re_path(
        rf"^sync-devices/{USER}\.json$",
        views.SyncDevicesView.as_view(),
        name="gpodder-sync-devices",
    ),
    re_path(
        rf"^subscriptions/{USER}/{DEVICE}\.json$",
        views.SubscriptionsView.as_view(),
        name="gpodder-subscriptions",
    ),
]

simple = [
    re_path(
        rf"^{USER}/{DEVICE}\.(?P<fmt>json|opml|txt)$",
        views.SimpleDeviceSubscriptionsView.as_view(),
        name="gpodder-simple-device",
    ),
    re_path(
        rf"^{USER}\.(?P<fmt>json|opml|txt)$",
        views.SimpleUserSubscriptionsView.as_view(),
        name="gpodder-simple-user",
    ),
]
