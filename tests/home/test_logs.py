"""Log lines an operator can read: time, level and logger on each; an app's expected 401 no
warning; a refused Host one line."""

import logging
from typing import Any

import pytest
from django.test import Client

from api.logs import ExpectedUnauthorized, OneLine


def _records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith("django.")]


def test_an_apps_first_401_is_no_warning(db: None, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO):
        assert Client().get("/api/2/devices/alice.json").status_code == 401
    kept = [r for r in _records(caplog) if ExpectedUnauthorized().filter(r)]
    assert not [r for r in kept if r.levelno >= logging.WARNING and "401" in r.getMessage()]
    assert not [r for r in kept if getattr(r, "status_code", None) == 401]


def test_other_client_errors_stay_warnings(db: None, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO):
        Client().get("/no-such-page/")
    assert any(
        getattr(r, "status_code", None) == 404 and ExpectedUnauthorized().filter(r)
        for r in _records(caplog)
    )


def test_a_refused_host_is_one_warning_line(
    db: None, settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    settings.ALLOWED_HOSTS = ["sync.example.com"]
    with caplog.at_level(logging.INFO):
        Client().get("/login/", HTTP_HOST="evil.example.com")
    (record,) = [r for r in _records(caplog) if r.name == "django.security.DisallowedHost"]
    assert OneLine().filter(record)
    assert record.levelname == "WARNING"
    assert record.exc_info is None


def test_every_line_carries_the_time_the_level_and_the_logger(settings: Any) -> None:
    line = settings.LOGGING["formatters"]["line"]["format"]
    formatter = logging.Formatter(line)
    record = logging.LogRecord("feedchecks.services", logging.INFO, __file__, 1, "ok", None, None)
    text = formatter.format(record)
    assert " INFO feedchecks.services: ok" in text
    assert text[:4].isdigit()
    assert settings.LOGGING["handlers"]["console"]["formatter"] == "line"
