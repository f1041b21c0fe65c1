"""Hostile input to every form of the pages: whatever arrives, never a 500, and a refused form
changes nothing."""

from typing import Any

import pytest
from django.test import Client

from accounts.models import AppPassword
from deletions.models import AccountDeletion, Deletion
from gpodder.models import Device
from gpodder.services import device_touch
from subscriptions.models import Subscription
from tests.helpers import subscribe
from tests.hostile import CORPUS

FORMS = {
    "application/x-www-form-urlencoded": [
        b"caption=%00&type=%FF%FE",
        b"name=" + b"%ED%A0%80" * 10,
        b"name[]=a&name[]=b&subscribe=1&subscribe=0",
        b"password=" + b"x" * 200_000,
        b"%%%&&&===;;",
        b"file=not-a-file&next=javascript:alert(1)",
        b"old_password=%00&new_password1=%00&new_password2=%00",
        b"username=%00&password=%00&password_again=%01",
    ],
    "multipart/form-data; boundary=xyz": [
        b'--xyz\r\nContent-Disposition: form-data; name="file"; filename="a.opml"\r\n\r\n'
        b"\x00\xff\xfe<opml>\r\n--xyz--\r\n",
        b"--xyz\r\nbroken",
        b"",
    ],
    "application/json": list(CORPUS.values())[:12],
    "text/plain": [b"\x00\x01\x02", "🎧".encode() * 1000],
}


@pytest.fixture
def world(person: Any, stranger: Any) -> dict[str, Any]:
    mine = subscribe(person, "https://mine.example/feed")
    theirs = subscribe(stranger, "https://theirs.example/feed")
    device_touch(user=person, device_id="phone")
    return {"mine": mine, "theirs": theirs}


def snapshot() -> list[Any]:
    return [
        list(Subscription.objects.order_by("pk").values()),
        list(Deletion.objects.values()),
        list(Device.objects.order_by("pk").values()),
        list(AppPassword.objects.values()),
        list(AccountDeletion.objects.values()),
    ]


@pytest.mark.parametrize(
    "path",
    [
        "/login/",
        "/register/",
        "/logout/",
        "/podcasts/{mine}/subscription/",
        "/podcasts/{mine}/delete/",
        "/podcasts/{theirs}/delete/",
        "/devices/phone/",
        "/devices/phone/remove/",
        "/data/import/",
        "/account/password/",
        "/account/app-passwords/",
        "/account/app-passwords/1/revoke/",
        "/account/delete/",
    ],
)
def test_hostile_forms_are_refused_without_a_500(
    page: Client, world: dict[str, Any], settings: Any, path: str
) -> None:
    settings.REGISTRATION = "open"
    url = path.format(mine=world["mine"].guid, theirs=world["theirs"].guid)
    changes_something = path in (
        "/logout/",
        "/podcasts/{mine}/subscription/",
        "/podcasts/{mine}/delete/",
        "/devices/phone/remove/",
        "/account/app-passwords/",  # undecodable bytes arrive as U+FFFD: a name like any
    )
    for content_type, bodies in FORMS.items():
        for body in bodies:
            before = snapshot()
            response = page.post(url, body, content_type=content_type)
            assert response.status_code < 500, (url, content_type, body[:60])
            if not changes_something:
                assert snapshot() == before, (url, content_type, body[:60])
            page.force_login(world["mine"].user)  # some bodies sign out


@pytest.mark.parametrize(
    "path",
    [
        "/podcasts/?q=%00%FF",
        "/podcasts/not-a-guid/",
        "/devices/" + "x" * 5000 + "/",
        "/devices/%00/",
        "/devices/..%2F..%2Fetc/",
        "/deletions/-1/",
        "/deletions/99999999999999999999999999/",
        "/account/deleted/00000000-0000-0000-0000-000000000000/",
        "/data/everything.json?x=%00",
        "/history/?page=%FF",
    ],
)
def test_hostile_addresses_are_answered_without_a_500(page: Client, path: str) -> None:
    assert page.get(path).status_code in (200, 302, 400, 404)
