"""A person's podcasts: the list, adding one by its address, a podcast's page, unsubscribing
and deleting (docs/web.md, "Podcasts")."""

import uuid
from datetime import timedelta
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import format_html
from django.views.decorators.http import require_GET, require_POST

from core import clock
from core.exceptions import Gone, InvalidInput
from deletions import selectors as deletion_selectors
from deletions import services as deletions
from subscriptions import feeds
from subscriptions.services import SubscriptionUpdate, subscription_update
from web import forms, selectors, services
from web.views.common import GET_POST, form_errors, or_404, person_required, return_page

# How long the list keeps fetching itself again while a podcast just added has no title: a feed
# check takes at most FEED_FETCH_TIMEOUT (20 s) once a worker has it; past this, the person
# reloads.
ADDED_REFRESH = timedelta(seconds=60)


def _podcasts_page(
    request: HttpRequest, *, add_form: Any = None, status: int = 200
) -> HttpResponse:
    asked = request.GET.copy()
    asked.setdefault("status", "subscribed")  # so the select shows the default it lists
    search = forms.PodcastSearchForm(asked)
    valid = search.is_valid()
    query = search.cleaned_data.get("q", "") if valid else ""
    shown = search.cleaned_data.get("status", "") if valid else ""
    page = selectors.podcasts_page(
        user=request.user, query=query, status=shown, page=request.GET.get("page")
    )
    # The filters are of no use to an account without a podcast: an empty page of one that has
    # some keeps them, to change the search.
    has_any = bool(page.object_list) or selectors.podcasts_exist(user=request.user)
    added = feeds.parse_guid(request.GET.get("added"))
    since = clock.now() - ADDED_REFRESH
    waiting = any(
        sub.guid == added and not getattr(sub, "feed_title", "") and sub.created > since
        for sub in page.object_list
    )
    return render(
        request,
        "web/podcasts.html",
        {
            "search": search,
            "add_form": add_form or forms.PodcastAddForm(),
            "page": page,
            "query": query,
            "status": shown,
            "has_any": has_any,
            "waiting": waiting,
        },
        status=status,
    )


@require_GET
@person_required
def podcasts(request: HttpRequest) -> HttpResponse:
    return _podcasts_page(request)


@GET_POST
@person_required
def podcast_add(request: HttpRequest) -> HttpResponse:
    """Add a podcast by its feed's address, as an app adds one (web.services.podcast_add).

    A refused address shows the list at this address, with the form's error: the list's own
    links (its pages, an unsubscribe's way back) lead here then, and GET sends them on to it."""
    if request.method == "GET":
        query = request.GET.urlencode()
        return redirect(reverse("web:podcasts") + (f"?{query}" if query else ""))
    form = forms.PodcastAddForm(request.POST)
    if form.is_valid():
        try:
            added = services.podcast_add(user=request.user, sent=form.cleaned_data["url"])
        except InvalidInput as exc:
            form_errors(form, exc)
        else:
            _tell_added(request, added, sent=form.cleaned_data["url"])
            # A feed never fetched has no title to wait for.
            if added.before == services.SUBSCRIBED or added.unfetchable:
                return redirect("web:podcasts")
            return redirect(f"{reverse('web:podcasts')}?added={added.subscription.guid}")
    return _podcasts_page(request, add_form=form, status=400)


def _tell_added(request: HttpRequest, added: services.PodcastAdded, *, sent: str) -> None:
    sub = added.subscription
    link = format_html(
        '<a href="{}">{}</a>', reverse("web:podcast", args=[sub.guid]), added.title or sub.feed_url
    )
    read_as = format_html(" (read as {})", added.used) if added.used != sent else ""
    if added.before == services.SUBSCRIBED:
        messages.info(request, format_html("You already follow this podcast: {}.", link))
        return
    if added.before == services.NEW:
        waits = not (added.title or added.unfetchable)
        later = " Its title and artwork show once the server has read it." if waits else ""
        told = format_html("Added {}{}.{}", link, read_as, later)
    elif added.before == services.DELETED:
        told = format_html(
            "{}{} was deleted: adding it brought it back. Its listening history went with the "
            "deletion and does not come back.",
            link,
            read_as,
        )
    elif added.before == services.BEING_DELETED:
        told = format_html(
            "Subscribed again to {}{}: its deletion, still waiting, will not go ahead.",
            link,
            read_as,
        )
    else:
        told = format_html("Subscribed again to {}{}.", link, read_as)
    if not added.unfetchable:
        messages.success(request, told)
        return
    # One message: "shows once the server has read it" beside "will not show" contradicted.
    messages.warning(
        request,
        format_html(
            "{} This address is on a private or local network: the server does not fetch feeds "
            "there, so its title and artwork will not show. Your apps can still sync it. (The "
            "person who runs the server can let it fetch there with "
            "FEED_FETCH_ALLOWED_NETWORKS.)",
            told,
        ),
    )


@require_GET
@person_required
def podcast(request: HttpRequest, guid: uuid.UUID) -> HttpResponse:
    detail = or_404(
        lambda: selectors.podcast_detail(user=request.user, guid=guid, page=request.GET.get("page"))
    )
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


@GET_POST
@person_required
def podcast_delete(request: HttpRequest, guid: uuid.UUID) -> HttpResponse:
    """GET: what deleting the subscription takes with it, with Unsubscribe as the lighter choice.
    POST: delete it through the deletion flow, then show the deletion's status."""
    if request.method == "GET":
        return _delete_confirmation(request, guid)
    try:
        deletion = or_404(lambda: deletions.deletion_request(user=request.user, guid=guid))
    except Gone:
        messages.info(request, "This subscription is deleted already.")
        return redirect("web:podcast", guid=guid)
    return redirect("web:deletion", deletion_id=deletion.pk)


def _delete_confirmation(request: HttpRequest, guid: uuid.UUID) -> HttpResponse:
    found = or_404(lambda: selectors.podcast_to_delete(user=request.user, guid=guid))
    sub = found.subscription
    if sub.deleted is not None:
        messages.info(request, "This subscription is deleted already.")
        return redirect("web:podcast", guid=guid)
    if sub.pending_deletion:
        messages.info(request, "This subscription is being deleted already.")
        return redirect("web:deletion", deletion_id=sub.pending_deletion)
    return render(request, "web/podcast_delete.html", {"sub": sub, "actions": found.actions})


@require_GET
@person_required
def deletion(request: HttpRequest, deletion_id: int) -> HttpResponse:
    found = or_404(
        lambda: deletion_selectors.deletion_get(user=request.user, deletion_id=deletion_id)
    )
    return render(request, "web/deletion.html", {"deletion": found})
