"""The listening history, and a person's data: OPML import and export, everything as JSON
(docs/web.md)."""

from typing import Any

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_GET, require_POST

from core import clock
from core.exceptions import InvalidInput
from imports import selectors as imports
from imports import services
from imports.remote import Account
from subscriptions import opml
from web import forms, selectors
from web import services as web_services
from web.views.common import form_errors, or_404, person_of, person_required

# The page holds three forms: each its own ids for its fields' labels.
HISTORY_IDS, SERVER_IDS = "history_%s", "server_%s"


@require_GET
@person_required
def history(request: HttpRequest) -> HttpResponse:
    page = selectors.history_page(user=request.user, page=request.GET.get("page"))
    return render(request, "web/history.html", {"page": page})


@require_GET
@person_required
def feed_history(request: HttpRequest, key: str) -> HttpResponse:
    """The history of a podcast without a subscription, which has no page of its own; one with
    a subscription leads to the subscription's page, where its history is."""
    found = or_404(
        lambda: selectors.feed_history(user=request.user, key=key, page=request.GET.get("page"))
    )
    if found.subscription is not None:
        return redirect(reverse("web:podcast", args=[found.subscription.guid]) + "#history")
    return render(request, "web/feed_history.html", {"found": found, "page": found.history})


@require_GET
@person_required
def data(request: HttpRequest) -> HttpResponse:
    return _data_page(request)


def _data_page(request: HttpRequest, status: int = 200, **forms_given: Any) -> HttpResponse:
    context = {
        "form": forms.OpmlUploadForm(),
        "file_form": forms.HistoryFileForm(auto_id=HISTORY_IDS),
        "server_form": forms.ServerImportForm(auto_id=SERVER_IDS),
        "imports": imports.imports_of(user=request.user),
        **forms_given,
    }
    return render(request, "web/data.html", context, status=status)


@require_POST
@person_required
def history_file_import(request: HttpRequest) -> HttpResponse:
    form = forms.HistoryFileForm(request.POST, request.FILES, auto_id=HISTORY_IDS)
    if form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            started = services.file_import_start(
                user=request.user, name=upload.name or "file", file=upload
            )
        except InvalidInput as exc:
            form_errors(form, exc)
        else:
            return redirect("web:import-status", import_id=started.pk)
    return _data_page(request, 400, file_form=form)


@sensitive_post_parameters("password")
@require_POST
@person_required
def server_import(request: HttpRequest) -> HttpResponse:
    form = forms.ServerImportForm(request.POST, auto_id=SERVER_IDS)
    if form.is_valid():
        account = Account(
            server=form.cleaned_data["server"],
            username=form.cleaned_data["username"],
            password=form.cleaned_data["password"],
            protocol=form.cleaned_data["protocol"],
            own_network=form.cleaned_data.get("own_network", False),
        )
        try:
            started = services.server_import_start(user=request.user, account=account)
        except InvalidInput as exc:
            form_errors(form, exc)
        else:
            return redirect("web:import-status", import_id=started.pk)
    return _data_page(request, 400, server_form=form)


@require_GET
@person_required
def import_status(request: HttpRequest, import_id: int) -> HttpResponse:
    found = or_404(lambda: imports.import_of(user=request.user, import_id=import_id))
    return render(request, "web/import.html", {"upload": found})


@require_POST
@person_required
def opml_import(request: HttpRequest) -> HttpResponse:
    form = forms.OpmlUploadForm(request.POST, request.FILES)
    summary = None
    status = 200
    if form.is_valid():
        try:
            summary = web_services.opml_import(
                user=request.user, document=form.cleaned_data["file"].read()
            )
        except InvalidInput as exc:
            form.add_error("file", f"This file could not be read: {exc.message}.")
    if not form.is_valid() or summary is None:
        status = 400
    return _data_page(request, status, form=form, summary=summary)


@require_GET
@person_required
def opml_export(request: HttpRequest) -> HttpResponse:
    body = opml.opml_render(
        feeds=selectors.opml_feeds(user=request.user),
        created=clock.now(),
        owner=request.user.get_username(),
    )
    response = HttpResponse(body, content_type=opml.CONTENT_TYPE)
    response["Content-Disposition"] = 'attachment; filename="subscriptions.opml"'
    return response


@require_GET
@person_required
def everything(request: HttpRequest) -> StreamingHttpResponse:
    response = StreamingHttpResponse(
        selectors.everything(user=person_of(request)), content_type="application/json"
    )
    response["Content-Disposition"] = 'attachment; filename="podcast-sync-data.json"'
    return response
