"""/health against a real Redis (docs/operations.md): the broker answers, then goes away."""

import pytest

from core import version
from tests import servers
from tests.helpers import health_answer

pytestmark = pytest.mark.e2e


def test_health_with_a_running_redis(anon, db, settings):
    with servers.redis() as redis:
        settings.REDIS_URL = f"redis://127.0.0.1:{redis.port}/0"

        response = anon.get("/health")

    assert response.status_code == 200, response.content
    assert health_answer(response) == {
        "status": "ok",
        "database": "ok",
        "broker": "ok",
        "version": version.VERSION,
    }


def test_health_when_redis_goes_away(anon, db, settings):
    with servers.redis() as redis:
        settings.REDIS_URL = f"redis://127.0.0.1:{redis.port}/0"
        assert anon.get("/health").status_code == 200
        redis.stop()

        response = anon.get("/health")

    assert response.status_code == 503, response.content
    body = response.json()
    assert body["status"] != "ok"
    assert body["broker"] != "ok"
    assert body["database"] == "ok"
    assert body["version"] == version.VERSION  # which release is failing, too
