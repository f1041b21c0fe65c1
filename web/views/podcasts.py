"""A person's podcasts: the list, a podcast's page, unsubscribing and deleting (docs/web.md,
"Podcasts")."""

import uuid

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from core.exceptions import Gone
from deletions import selectors as deletion_selectors
from deletions import services as deletions
from subscriptions.services import SubscriptionUpdate, subscription_update
from web import forms, selectors
from web.views.common import or_404, person_required, return_page


@require_GET
@person_required
def podcasts(request: HttpRequest) -> HttpResponse:
    search = forms.PodcastSearchForm(request.GET)
    valid = search.is_valid()
    query = search.cleaned_data.get("q", "") if valid else ""
    status = search.cleaned_data.get("status", "") if valid else ""
    page = selectors.podcasts_page(
        user=request.user, query=query, status=status, page=request.GET.get("page")
    )
    return render(
        request,
        "web/podcasts.html",
        {"search": search, "page": page, "query": query, "status": status},
    )


@require_GET
@person_required
def podcast(request: HttpRequest, guid: uuid.UUID) -> HttpResponse:
    detail = or_404(lambda: selectors.podcast_detail(user=request.user, guid=guid))
    return render(request, "web/podcast.html", {"detail": detail, "sub": detail.subscription})


@require_POST
@person_required
def podcast_subscription(request: HttpRequest, guid: uuid.UUID) -> HttpResponse:
    """Unsubscribe, or subscribe again: what a PATCH of is_subscribed does."""
    form = forms.SubscriptionForm(request.POST)
    form.is_valid()
    subscribe = bool(form.cleaned_data.get("subscribe"))
    try:
        sub = or_404(
            lambda: subscription_update(
                user=request.user, guid=guid, change=SubscriptionUpdate(is_subscribed=subscribe)
            )
        )
    except Gone:
        messages.error(request, "This subscription has been deleted: add its feed again instead.")
    else:
        told = "Subscribed again to" if subscribe else "Unsubscribed from"
        messages.success(request, f"{told} {sub.feed_url}.")
    return redirect(return_page(request, reverse("web:podcast", args=[guid])))


@require_POST
@person_required
def podcast_delete(request: HttpRequest, guid: uuid.UUID) -> HttpResponse:
    """Delete the subscription through the deletion flow, then show the deletion's status."""
    try:
        deletion = or_404(lambda: deletions.deletion_request(user=request.user, guid=guid))
    except Gone:
        messages.info(request, "This subscription is deleted already.")
        return redirect("web:podcast", guid=guid)
    return redirect("web:deletion", deletion_id=deletion.pk)


@require_GET
@person_required
def deletion(request: HttpRequest, deletion_id: int) -> HttpResponse:
    found = or_404(
        lambda: deletion_selectors.deletion_get(user=request.user, deletion_id=deletion_id)
    )
    return render(request, "web/deletion.html", {"deletion": found})
