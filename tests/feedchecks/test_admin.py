"""Staff see each feed's last check, result and error in the admin, read-only."""

import uuid

import pytest

from core import clock
from feedchecks.models import FeedCheck
from subscriptions import feeds

FEEDCHECKS = "/admin/feedchecks/feedcheck/"


@pytest.fixture
def checks(db):
    now = clock.now()
    return [
        FeedCheck.objects.create(
            key_digest=feeds.feed_key_digest("https://a.example/feed"),
            url="https://a.example/feed",
            claimed=now,
            checked=now,
            result=FeedCheck.Result.GUID,
            guid=uuid.UUID("917393e3-1b1e-5cef-ace4-edaa54e1f810"),
        ),
        FeedCheck.objects.create(
            key_digest=feeds.feed_key_digest("http://10.0.0.1/feed"),
            url="http://10.0.0.1/feed",
            claimed=now,
            checked=now,
            result=FeedCheck.Result.ERROR,
            error="10.0.0.1 resolves to 10.0.0.1, which may not be fetched",
        ),
    ]


def test_the_list_shows_url_check_result_and_error(admin_client, checks):
    page = admin_client.get(FEEDCHECKS).content.decode()
    assert "https://a.example/feed" in page
    assert "guid found" in page
    assert "which may not be fetched" in page
    assert "/admin/subscriptions/subscription/?q=https%3A%2F%2Fa.example%2Ffeed" in page


def test_filter_by_result(admin_client, checks):
    page = admin_client.get(FEEDCHECKS, {"result": "error"}).content.decode()
    assert "http://10.0.0.1/feed" in page
    assert "https://a.example/feed" not in page


def test_the_change_page_is_read_only(admin_client, checks):
    url = f"{FEEDCHECKS}{checks[1].pk}/change/"
    page = admin_client.get(url)
    assert page.status_code == 200
    assert "which may not be fetched" in page.content.decode()
    admin_client.post(url, {"url": "http://changed.example/"})
    checks[1].refresh_from_db()
    assert checks[1].url == "http://10.0.0.1/feed"
    assert admin_client.get(f"{FEEDCHECKS}add/").status_code == 403
    assert admin_client.post(f"{FEEDCHECKS}{checks[1].pk}/delete/").status_code == 403
