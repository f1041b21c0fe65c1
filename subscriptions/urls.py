from django.urls import path
from rest_framework.routers import SimpleRouter

from subscriptions.views import SubscriptionOpmlView, SubscriptionViewSet

router = SimpleRouter(trailing_slash=False)
router.register("subscriptions", SubscriptionViewSet, basename="subscription")

# Before the router's routes, so that no pattern of theirs can ever take the name for a guid.
urlpatterns = [
    path("subscriptions.opml", SubscriptionOpmlView.as_view(), name="subscription-opml"),
    *router.urls,
]
