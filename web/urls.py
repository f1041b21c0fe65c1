"""The account holders' pages (docs/web.md): each path names one view of web/views/."""

from django.urls import path, re_path

from api.middleware import IMPORT_FILE_PATH
from web.views import (
    account,
    connect,
    data,
    devices,
    factors,
    feeds,
    podcasts,
    recovery,
    signing,
    site,
)

app_name = "web"
DEVICE_ID = r"[A-Za-z0-9_.\-]{1,64}"
# A podcast without a subscription is named by its feed URL's key (subscriptions.feeds): any
# other string is a 404, never a query.
FEED_KEY = r"[0-9a-f]{64}"

urlpatterns = [
    path("", signing.home, name="home"),
    path("login/", signing.sign_in, name="login"),
    path("logout/", signing.sign_out, name="logout"),
    path("login/password/", signing.password_choose, name="password-choose"),
    path("login/second/", factors.second_step, name="login-second"),
    path("login/reset/", recovery.password_forgotten, name="password-forgotten"),
    path(
        "login/reset/<str:uidb64>/<str:token>/",
        recovery.password_reset,
        name="password-reset-link",
    ),
    path("register/", signing.register, name="register"),
    path("register/<str:token>/", signing.register_invited, name="register-invited"),
    # The page an app logging in with Nextcloud's Login Flow v2 opens; any token reaches the
    # view, which answers 404 to one that is not a flow's.
    path("login/flow/<str:token>/", signing.login_flow, name="login-flow"),
    path("podcasts/", podcasts.podcasts, name="podcasts"),
    path("podcasts/add/", podcasts.podcast_add, name="podcast-add"),
    path("podcasts/<uuid:guid>/", podcasts.podcast, name="podcast"),
    path("podcasts/<uuid:guid>/subscription/", podcasts.podcast_subscription, name="subscription"),
    path("podcasts/<uuid:guid>/delete/", podcasts.podcast_delete, name="podcast-delete"),
    path("podcasts/<uuid:guid>/check/", feeds.podcast_check, name="podcast-check"),
    path("deletions/<int:deletion_id>/", podcasts.deletion, name="deletion"),
    path("devices/", devices.devices, name="devices"),
    # A device id as the gpodder API allows them: any other is a 404, never a query.
    re_path(rf"^devices/(?P<device_id>{DEVICE_ID})/$", devices.device, name="device"),
    re_path(
        rf"^devices/(?P<device_id>{DEVICE_ID})/remove/$",
        devices.device_remove,
        name="device-remove",
    ),
    path("history/", data.history, name="history"),
    re_path(rf"^history/feeds/(?P<key>{FEED_KEY})/$", data.feed_history, name="history-feed"),
    path("data/", data.data, name="data"),
    path("data/import/", data.opml_import, name="import"),
    path(IMPORT_FILE_PATH.lstrip("/"), data.history_file_import, name="import-file"),
    path("data/import-server/", data.server_import, name="import-server"),
    path("data/imports/<int:import_id>/", data.import_status, name="import-status"),
    path("data/subscriptions.opml", data.opml_export, name="export-opml"),
    path("data/everything.json", data.everything, name="export-json"),
    path("account/", account.account, name="account"),
    path("account/password/", account.password_change, name="password"),
    path("account/address/", account.address_change, name="address"),
    path("account/address/<str:token>/", account.address_confirm, name="address-confirm"),
    path("account/app-passwords/", account.app_password_create, name="app-password-create"),
    path(
        "account/app-passwords/<int:app_password_id>/revoke/",
        account.app_password_revoke,
        name="app-password-revoke",
    ),
    path("account/invitations/", account.invitation_create, name="invitation-create"),
    path(
        "account/invitations/<int:invitation_id>/withdraw/",
        account.invitation_withdraw,
        name="invitation-withdraw",
    ),
    path("account/factors/app/", factors.factor_app_add, name="factor-app-add"),
    path("account/factors/app/confirm/", factors.factor_app_confirm, name="factor-app-confirm"),
    path(
        "account/factors/recovery-codes/",
        factors.recovery_codes_new,
        name="factor-recovery-codes",
    ),
    path("account/factors/remove/", factors.factor_remove, name="factor-remove"),
    path("account/delete/", account.account_delete, name="account-delete"),
    path("account/deleted/<uuid:key>/", account.account_deletion, name="account-deletion"),
    path("connect/", connect.connect, name="connect"),
    path("favicon.ico", site.favicon, name="favicon"),
]
