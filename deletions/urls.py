from rest_framework.routers import SimpleRouter

from deletions.views import DeletionViewSet

router = SimpleRouter(trailing_slash=False)
router.register("deletions", DeletionViewSet, basename="deletion")

urlpatterns = router.urls
