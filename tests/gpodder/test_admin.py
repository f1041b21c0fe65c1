"""Staff see the devices gpodder apps created, with their last use, and change none of them."""

from typing import Any

from django.test import Client

from gpodder.models import Device
from tests.factories import UserFactory


def test_staff_list_and_search_devices_with_their_last_use(app, alice, bob):
    app.post(
        "/api/2/devices/alice/phone.json", {"caption": "Pocket", "type": "mobile"}, format="json"
    )
    device = Device.objects.get()
    staff: Any = UserFactory(is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(staff)

    listing = client.get("/admin/gpodder/device/", {"q": "alice"})
    assert listing.status_code == 200
    page = listing.content.decode()
    assert "phone" in page
    assert "Pocket" in page
    assert "Last used" in page
    assert "phone" not in client.get("/admin/gpodder/device/", {"q": "bob"}).content.decode()

    detail = client.get(f"/admin/gpodder/device/{device.pk}/change/")
    assert detail.status_code == 200
    assert client.get("/admin/gpodder/device/add/").status_code == 403
    client.post(f"/admin/gpodder/device/{device.pk}/change/", {"caption": "changed"})
    device.refresh_from_db()
    assert device.caption == "Pocket"
