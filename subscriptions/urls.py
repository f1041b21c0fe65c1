"""The subscriptions app's own /v1/ routes. Its viewset, SubscriptionViewSet, is routed in
config/urls.py, where the deletions app's DELETE action joins it."""

from django.urls import path

from subscriptions.views import SubscriptionOpmlView

urlpatterns = [
    path("subscriptions.opml", SubscriptionOpmlView.as_view(), name="subscription-opml"),
]
