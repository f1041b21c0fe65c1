"""A person's devices: the list, a device's page, removing one (docs/web.md, "Devices")."""

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from core.exceptions import InvalidInput
from gpodder import services as gpodder
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
    """A device's page: rename it, or change its type."""
    found = or_404(lambda: selectors.device_of(user=request.user, device_id=device_id))
    initial = {"caption": found.caption, "type": found.type}
    form = forms.DeviceForm(request.POST if request.method == "POST" else None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            gpodder.device_update(
                user=request.user,
                device_id=found.device_id,
                caption=form.cleaned_data["caption"],
                type=form.cleaned_data["type"],
            )
        except InvalidInput as exc:  # removed meanwhile, and no room to make it again
            form_errors(form, exc)
        else:
            messages.success(request, f"Device {found.device_id} saved.")
            return redirect("web:devices")
    return render(request, "web/device.html", {"device": found, "form": form})


@require_POST
@person_required
def device_remove(request: HttpRequest, device_id: str) -> HttpResponse:
    or_404(lambda: gpodder.device_remove(user=request.user, device_id=device_id))
    messages.success(
        request, f"Device {device_id} removed. If its app syncs again, it comes back as new."
    )
    return redirect("web:devices")
