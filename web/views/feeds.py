"""A podcast's feed: asking for a check of it now (docs/web.md, "When a feed can't be fetched")."""

import uuid

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST
from rest_framework.exceptions import Throttled

from core.exceptions import Gone
from feedchecks.services import FeedChecksOff, feed_check_now
from web.views.common import or_404, person_required, throttled_message


@require_POST
@person_required
def podcast_check(request: HttpRequest, guid: uuid.UUID) -> HttpResponse:
    """Check the subscription's feed now, whenever it was checked last; back to its page."""
    try:
        or_404(lambda: feed_check_now(user=request.user, guid=guid))
    except Gone:
        messages.error(request, "This subscription has been deleted: its feed is not checked.")
    except FeedChecksOff as exc:
        messages.error(request, exc.message)
    except Throttled as exc:
        messages.error(request, throttled_message(exc))
    else:
        messages.success(
            request, "The feed is being checked. Reload this page in a moment to see the result."
        )
    return redirect("web:podcast", guid=guid)
