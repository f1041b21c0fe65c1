"""The account holders' pages (docs/web.md): each path names one view of web/views.py."""

from django.urls import path, re_path

from web import views

app_name = "web"
DEVICE_ID = r"[A-Za-z0-9_.\-]{1,64}"

urlpatterns = [
    path("", views.home, name="home"),
    path("login/", views.sign_in, name="login"),
    path("logout/", views.sign_out, name="logout"),
    path("register/", views.register, name="register"),
    # The page an app logging in with Nextcloud's Login Flow v2 opens; any token reaches the
    # view, which answers 404 to one that is not a flow's.
    path("login/flow/<str:token>/", views.login_flow, name="login-flow"),
    path("podcasts/", views.podcasts, name="podcasts"),
    path("podcasts/<uuid:guid>/", views.podcast, name="podcast"),
    path("podcasts/<uuid:guid>/subscription/", views.podcast_subscription, name="subscription"),
    path("podcasts/<uuid:guid>/delete/", views.podcast_delete, name="podcast-delete"),
    path("deletions/<int:deletion_id>/", views.deletion, name="deletion"),
    path("devices/", views.devices, name="devices"),
    # A device id as the gpodder API allows them: any other is a 404, never a query.
    re_path(rf"^devices/(?P<device_id>{DEVICE_ID})/$", views.device, name="device"),
    re_path(
        rf"^devices/(?P<device_id>{DEVICE_ID})/remove/$", views.device_remove, name="device-remove"
    ),
    path("history/", views.history, name="history"),
    path("data/", views.data, name="data"),
    path("data/import/", views.opml_import, name="import"),
    path("data/subscriptions.opml", views.opml_export, name="export-opml"),
    path("data/everything.json", views.everything, name="export-json"),
    path("account/", views.account, name="account"),
    path("account/password/", views.password_change, name="password"),
    path("account/app-passwords/", views.app_password_create, name="app-password-create"),
    path(
        "account/app-passwords/<int:app_password_id>/revoke/",
        views.app_password_revoke,
        name="app-password-revoke",
    ),
    path("account/delete/", views.account_delete, name="account-delete"),
    path("account/deleted/<uuid:key>/", views.account_deletion, name="account-deletion"),
]
