from rest_framework.routers import SimpleRouter

from subscriptions.views import SubscriptionViewSet

router = SimpleRouter(trailing_slash=False)
router.register("subscriptions", SubscriptionViewSet, basename="subscription")

urlpatterns = router.urls
