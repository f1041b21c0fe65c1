"""Fixtures of the Nextcloud paths' tests: each test starts with no app device remembered, and
an app of alice's (tests/conftest.py) on her own password."""

from collections.abc import Iterator
from typing import Any

import pytest
from rest_framework.test import APIClient

from nextcloud.services import app_device_ids
from tests.nextcloud.helpers import nextcloud_client


@pytest.fixture(autouse=True)
def _forget_app_devices() -> Iterator[None]:
    app_device_ids.clear()
    yield
    app_device_ids.clear()


@pytest.fixture
def nc(alice: Any) -> APIClient:
    """An app of alice's on her own password."""
    return nextcloud_client("alice")
