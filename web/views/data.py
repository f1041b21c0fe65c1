"""The listening history, and a person's data: OPML import and export, everything as JSON
(docs/web.md)."""

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from core import clock
from core.exceptions import InvalidInput
from subscriptions import opml
from web import forms, selectors, services
from web.views.common import person_of, person_required


@require_GET
@person_required
def history(request: HttpRequest) -> HttpResponse:
    return render(request, "web/history.html", {"podcasts": selectors.history(user=request.user)})


@require_GET
@person_required
def data(request: HttpRequest) -> HttpResponse:
    return render(request, "web/data.html", {"form": forms.OpmlUploadForm()})


@require_POST
@person_required
def opml_import(request: HttpRequest) -> HttpResponse:
    form = forms.OpmlUploadForm(request.POST, request.FILES)
    summary = None
    status = 200
    if form.is_valid():
        try:
            summary = services.opml_import(
                user=request.user, document=form.cleaned_data["file"].read()
            )
        except InvalidInput as exc:
            form.add_error("file", f"This file could not be read: {exc.message}.")
    if not form.is_valid() or summary is None:
        status = 400
    return render(request, "web/data.html", {"form": form, "summary": summary}, status=status)


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
