"""Fixtures of the feed checks' tests: checks turned on against the loopback feed server
(tests/conftest.py's feed_server), and an add that runs the check it sends."""

import pytest

from subscriptions.models import Subscription
from tests.helpers import subscribe


@pytest.fixture
def checks(settings):
    """Feed checks on, allowed to reach the loopback feed server, with short limits."""
    settings.FEED_CHECKS_ENABLED = True
    settings.FEED_FETCH_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    settings.FEED_FETCH_CONNECT_TIMEOUT = 1.0
    settings.FEED_FETCH_TIMEOUT = 1.5
    settings.FEED_FETCH_MAX_BYTES = 256 * 1024
    settings.FEED_CHECK_INTERVAL = 3600
    return settings


@pytest.fixture
def add(django_capture_on_commit_callbacks):
    """Subscribe through the service and run what it sends after commit (the check task)."""

    def add(user, url, guid=None):
        with django_capture_on_commit_callbacks(execute=True):
            sub = subscribe(user, url, guid)
        return Subscription.objects.get(pk=sub.pk) if _exists(sub) else None

    return add


def _exists(sub):
    return Subscription.objects.filter(pk=sub.pk).exists()
