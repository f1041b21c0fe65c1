"""Feed servers started by the tests, on loopback."""

from collections.abc import Iterator

import pytest

from tests.feedchecks.feedserver import FeedServer


@pytest.fixture
def feed_server() -> Iterator[FeedServer]:
    server = FeedServer().start()
    yield server
    server.stop()
