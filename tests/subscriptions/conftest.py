"""alice and bob without a password, as UserFactory makes an account: no test here signs in
(tests/conftest.py's alice and bob have one, for the apps' tests)."""

from typing import Any

import pytest

from tests.factories import UserFactory


@pytest.fixture
def alice(db: None) -> Any:
    return UserFactory(username="alice")


@pytest.fixture
def bob(db: None) -> Any:
    return UserFactory(username="bob")
