"""A person's devices: the list, a device's page with what its last syncs did, removing one once
asked (docs/web.md, "Devices")."""

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from core.exceptions import InvalidInput, NotFound
from gpodder import services as gpodder
from gpodder.models import SYNC_EVENTS_KEPT
from web import forms, selectors
from web.views.common import GET_POST, form_errors, or_404, person_required


@require_GET
@person_required
def devices(request: HttpRequest) -> HttpResponse:
    page = selectors.devices_page(user=request.user, page=request.GET.get("page"))
    return render(request, "web/devices.html", {"page": page})


@GET_POST
@person_required
def device(request: HttpRequest, device_id: str) -> HttpResponse:
    """A device's page: what its last syncs did; rename it, or change its type."""
    found = or_404(lambda: selectors.device_detail(user=request.user, device_id=device_id))
    initial = {"caption": found.device.caption, "type": found.device.type}
    form = forms.DeviceForm(request.POST if request.method == "POST" else None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            gpodder.device_update(
                user=request.user,
                device_id=found.device.device_id,
                caption=form.cleaned_data["caption"],
                type=form.cleaned_data["type"],
            )
        except InvalidInput as exc:  # removed meanwhile, and no room to make it again
            form_errors(form, exc)
        else:
            messages.success(request, f"Device {found.device.device_id} saved.")
            return redirect("web:devices")
    context = {"device": found.device, "sync": found.sync, "form": form, "kept": SYNC_EVENTS_KEPT}
    return render(request, "web/device.html", context)


@GET_POST
@person_required
def device_remove(request: HttpRequest, device_id: str) -> HttpResponse:
    """GET, or a POST that was not sent from it: what removing the device takes with it, and
    what stays. The confirmation's POST: remove it."""
    if request.method == "POST" and request.POST.get("confirmed") == "yes":
        try:
            gpodder.device_remove(user=request.user, device_id=device_id)
        except NotFound:
            return _device_gone(request, device_id)
        messages.success(
            request, f"Device {device_id} removed. If its app syncs again, it comes back as new."
        )
        return redirect("web:devices")
    try:
        found = selectors.device_to_remove(user=request.user, device_id=device_id)
    except NotFound:
        return _device_gone(request, device_id)
    return render(request, "web/device_remove.html", {"found": found})


def _device_gone(request: HttpRequest, device_id: str) -> HttpResponse:
    """Removed already, in another tab or by another click; or never this person's (the same
    answer: another person's device is not told apart from one that does not exist)."""
    message = (
        f"The device {device_id} is not among your devices: it was removed already, or never "
        "synced with this account."
    )
    context = {"title": "Device not found", "message": message, "back": "web:devices"}
    return render(request, "web/gone.html", context, status=404)
