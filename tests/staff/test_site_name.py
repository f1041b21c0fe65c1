"""SITE_NAME: the name the admin and the account holders' pages go by, shown as text whatever it
holds; and the site's icon on both."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client

ROOT = Path(__file__).resolve().parents[2]
ICON = '<link rel="icon" href="/static/web/favicon.svg" type="image/svg+xml">'


def test_the_default_name(admin_client):
    admin = admin_client.get("/admin/").content.decode()
    assert "<title>Administration | Podcast sync</title>" in admin
    assert '<a href="/admin/">Podcast sync</a>' in admin
    assert "Django administration" not in admin
    assert "Django site admin" not in admin
    login = Client().get("/login/").content.decode()
    assert "· Podcast sync</title>" in login
    assert '<a class="brand" href="/">Podcast sync</a>' in login


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("Radio Ünïcødé 📻", "Radio Ünïcødé 📻"),
        (
            '<script>alert("x")</script> & co',
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; co",
        ),
    ],
)
def test_the_name_is_shown_as_text_everywhere(admin_client, settings, name, shown):
    settings.SITE_NAME = name
    pages = {
        "admin index": admin_client.get("/admin/"),
        "admin list": admin_client.get("/admin/auth/user/"),
        "overview": admin_client.get("/admin/overview/"),
        "sign-in": Client().get("/login/"),
        "podcasts": admin_client.get("/podcasts/"),
        "not found": Client().get("/no-such-page/"),
    }
    for what, response in pages.items():
        body = response.content.decode()
        assert response.status_code in (200, 404), what
        assert f"{shown}</title>" in body, what
        assert "<script>alert" not in body, what
    assert f'<a href="/admin/">{shown}</a>' in pages["admin index"].content.decode()
    assert f'<a class="brand" href="/">{shown}</a>' in pages["sign-in"].content.decode()


def test_the_icon_is_on_the_pages_and_the_admin(admin_client):
    for url in ("/admin/", "/admin/overview/", "/admin/auth/user/", "/podcasts/"):
        assert ICON in admin_client.get(url).content.decode(), url
    assert ICON in Client().get("/login/").content.decode()


def test_the_icon_is_served(admin_client, settings):
    from django.contrib.staticfiles import finders

    found = finders.find("web/favicon.svg")
    assert found, "web/static/web/favicon.svg"
    assert Path(found).read_text().startswith("<svg")


@pytest.mark.parametrize(("value", "works"), [(" ", False), ("", False), ("My pods", True)])
def test_an_empty_name_stops_the_service_at_start(value, works, tmp_path):
    env = {
        "PATH": os.environ["PATH"],
        "DJANGO_SETTINGS_MODULE": "config.settings.base",
        "SECRET_KEY": "site-name-test-secret-key-long-enough-0123456789",
        "DATA_DIR": str(tmp_path),
        "SITE_NAME": value,
    }
    done = subprocess.run(
        [sys.executable, "-c", "from django.conf import settings; print(settings.SITE_NAME)"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if works:
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip() == value
    else:
        assert done.returncode != 0
        assert "SITE_NAME must not be empty" in done.stderr
