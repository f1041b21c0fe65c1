"""A device made for an app password goes by the app password's name (docs/nextcloud.md,
"Devices"): `AntennaPod/3.7.0` on the pages and in /api/2/'s device list, not only the id its
name had to become; a name the person gives it stays; the devices made before get theirs."""

from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from gpodder.models import Device
from nextcloud.services import app_device_ids, device_id_for
from tests.helpers import PASSWORD, basic, migrate
from tests.nextcloud.helpers import APP, app_password, nextcloud_client

FEED = "https://feeds.example.com/show.xml"
LOGIN_FLOW_NAME = "AntennaPod/3.7.0"


def subscribe_through(username: str, secret: str) -> None:
    response = nextcloud_client(username, secret).post(
        f"{APP}/subscription_change/create", {"add": [FEED], "remove": []}, format="json"
    )
    assert response.status_code == 200, response.content


def test_a_name_that_is_no_device_id_is_the_devices_caption(alice: Any) -> None:
    _, secret = app_password(alice, LOGIN_FLOW_NAME)
    subscribe_through("alice", secret)

    device = Device.objects.get(user=alice)
    assert device.device_id == device_id_for(LOGIN_FLOW_NAME)
    assert device.caption == LOGIN_FLOW_NAME
    api2 = APIClient()
    api2.credentials(HTTP_AUTHORIZATION=basic("alice"))
    listed = api2.get("/api/2/devices/alice.json").json()
    assert [(d["id"], d["caption"]) for d in listed] == [(device.device_id, LOGIN_FLOW_NAME)]

    page = Client()
    page.login(username="alice", password=PASSWORD)
    shown = page.get("/devices/").content.decode()
    assert f"<strong>{LOGIN_FLOW_NAME}</strong>" in shown


def test_a_name_that_is_its_id_leaves_the_caption_empty(alice: Any) -> None:
    _, secret = app_password(alice, "AntennaPod")
    subscribe_through("alice", secret)
    assert Device.objects.values_list("device_id", "caption").get() == ("AntennaPod", "")


def test_the_accounts_own_password_makes_an_uncaptioned_nextcloud_device(alice: Any) -> None:
    subscribe_through("alice", PASSWORD)
    assert Device.objects.values_list("device_id", "caption").get() == ("nextcloud", "")


def test_a_caption_the_person_gave_stays_through_later_syncs(alice: Any) -> None:
    _, secret = app_password(alice, LOGIN_FLOW_NAME)
    subscribe_through("alice", secret)
    Device.objects.filter(user=alice).update(caption="Sam's phone")
    app_device_ids.clear()  # as another process, which reads the name again
    subscribe_through("alice", secret)
    assert Device.objects.values_list("caption", flat=True).get() == "Sam's phone"


THE_REST = [("accounts", "0003_username_case_unique"), ("gpodder", "0003_device_sync_events")]
BEFORE = [("nextcloud", "0003_loginflow_started_from"), *THE_REST]
AFTER = [("nextcloud", "0004_app_device_captions"), *THE_REST]


@pytest.mark.django_db(transaction=True)
def test_the_migration_names_the_devices_made_before_and_keeps_given_names(
    back_to_latest: None,
) -> None:
    old = migrate(BEFORE)
    users = old.get_model("auth", "User").objects
    passwords = old.get_model("accounts", "AppPassword").objects
    devices = old.get_model("gpodder", "Device").objects
    sam, robin = users.create(username="sam"), users.create(username="robin")
    made = {"created": "2026-01-01T00:00Z", "last_used": "2026-01-01T00:00Z"}
    owned = [(sam, LOGIN_FLOW_NAME), (sam, "Kasts on my tablet"), (sam, "gPodder")]
    for n, (user, name) in enumerate([*owned, (robin, LOGIN_FLOW_NAME)]):
        passwords.create(user=user, name=name, digest=f"{n:064x}", created=made["created"])
    devices.create(user=sam, device_id=device_id_for(LOGIN_FLOW_NAME), **made)
    devices.create(user=sam, device_id=device_id_for("Kasts on my tablet"), caption="Tab", **made)
    devices.create(user=sam, device_id="gPodder", **made)
    # Robin's app password never synced; Sam's device of the same id is Sam's alone.
    migrate(AFTER)

    captions = dict(Device.objects.filter(user_id=sam.pk).values_list("device_id", "caption"))
    assert captions == {
        device_id_for(LOGIN_FLOW_NAME): LOGIN_FLOW_NAME,
        device_id_for("Kasts on my tablet"): "Tab",
        "gPodder": "",
    }
    assert not Device.objects.filter(user_id=robin.pk).exists()
