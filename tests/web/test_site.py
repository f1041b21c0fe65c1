"""The site's icon at /favicon.ico, where browsers and other clients ask for it whatever a page
links: the icon of web/static, kept a week, for anyone, without a query."""

import struct
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

ICO = Path(__file__).resolve().parents[2] / "web" / "static" / "web" / "favicon.ico"
LINK = '<link rel="icon" href="/static/web/favicon.ico" sizes="32x32">'


def test_the_icon_is_served_kept_a_week_without_a_query(
    client: Client, page: Client, django_assert_num_queries: Any
) -> None:
    for browser in (client, page):  # signed out and in
        with django_assert_num_queries(0):
            response = browser.get("/favicon.ico")
        assert response.status_code == 200
        assert response["Content-Type"] == "image/vnd.microsoft.icon"
        cache = {part.strip() for part in response["Cache-Control"].split(",")}
        assert cache == {"public", "max-age=604800"}
        assert response.content == ICO.read_bytes()
        assert "Set-Cookie" not in response


def test_the_icon_holds_the_sizes_browsers_pick_from() -> None:
    icon = ICO.read_bytes()
    reserved, kind, count = struct.unpack_from("<HHH", icon)
    assert (reserved, kind) == (0, 1)
    sizes = []
    for n in range(count):
        width, height, _, _, _, _, size, offset = struct.unpack_from("<BBBBHHII", icon, 6 + 16 * n)
        assert icon[offset : offset + 8] == b"\x89PNG\r\n\x1a\n"
        assert offset + size <= len(icon)
        sizes.append((width, height))
    assert sizes == [(16, 16), (32, 32), (48, 48)]


@pytest.mark.parametrize("method", ["post", "put", "delete"])
def test_the_icon_only_answers_get(client: Client, method: str) -> None:
    assert getattr(client, method)("/favicon.ico").status_code == 405


def test_the_pages_and_the_admin_link_it(page: Client, admin_client: Client) -> None:
    assert LINK in Client().get("/login/").content.decode()
    assert LINK in page.get("/podcasts/").content.decode()
    assert LINK in admin_client.get("/admin/").content.decode()
