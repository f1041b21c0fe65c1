"""Staff signed in to the admin, and one who is not staff."""

from typing import Any

import pytest
from django.test import Client

from tests.factories import UserFactory


@pytest.fixture
def staff(db: None) -> Any:
    return UserFactory(username="staff", is_staff=True, is_superuser=True)


@pytest.fixture
def admin_client(staff: Any) -> Client:
    client = Client()
    client.force_login(staff)
    return client
