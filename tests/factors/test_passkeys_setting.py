"""PASSKEYS: on by default on the full layout, off on the home server (plain HTTP, where a
browser refuses passkeys, and about 25 MB of every web process for their library). Run in both
slices: each checks the side its settings have; tests/home/test_footprint.py checks the home
server's processes never import the library."""

from typing import Any

from django.apps import apps
from django.conf import settings
from django.test import Client


def test_passkeys_are_offered_where_the_setting_has_them(page: Client, person: Any) -> None:
    account = page.get("/account/").content.decode()
    begun = page.post("/account/passkeys/registration/begin/")
    assert apps.is_installed("django_otp_webauthn") == settings.PASSKEYS
    if settings.PASSKEYS:
        assert 'id="passkey-registration-placeholder"' in account
        assert begun.status_code == 200
        assert begun.json()["rp"]["id"] == "testserver"
    else:
        assert "Passkeys are off on this server" in account
        assert "passkey-registration-placeholder" not in account
        assert begun.status_code == 404
    assert "Add an authenticator app" in account  # either way
