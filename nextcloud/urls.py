"""The Nextcloud gPodder Sync API's routes (docs/nextcloud.md). config/urls.py mounts them under
both /index.php/ and the root; each pattern takes an optional trailing slash, so no request to
them is ever redirected (a redirected POST arrives as a GET with no body)."""

from django.urls import URLPattern, re_path

from nextcloud import flow_views, views

APP = r"^apps/gpoddersync"

urlpatterns: list[URLPattern] = [
    # Login Flow v2 (nextcloud/flows.py): AntennaPod starts a flow, then polls it.
    re_path(r"^login/v2/?$", flow_views.start, name="nextcloud-login-flow"),
    re_path(r"^login/v2/poll/?$", flow_views.poll, name="nextcloud-login-flow-poll"),
    re_path(
        rf"{APP}/subscriptions/?$",
        views.SubscriptionsView.as_view(),
        name="nextcloud-subscriptions",
    ),
    re_path(
        rf"{APP}/subscription_change/create/?$",
        views.SubscriptionChangeView.as_view(),
        name="nextcloud-subscription-change",
    ),
    re_path(
        rf"{APP}/episode_action/?$",
        views.EpisodeActionsView.as_view(),
        name="nextcloud-episode-actions",
    ),
    re_path(
        rf"{APP}/episode_action/create/?$",
        views.EpisodeActionCreateView.as_view(),
        name="nextcloud-episode-action-create",
    ),
]
