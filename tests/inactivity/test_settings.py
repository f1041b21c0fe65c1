"""INACTIVE_ACCOUNT_DAYS and INACTIVE_WARNING_DAYS from the environment: off unless set, and a
policy that could not warn before it suspends stops the start, saying why."""

from pathlib import Path

import pytest

from tests.servers import settings_started

NAMES = ["INACTIVE_ACCOUNT_DAYS", "INACTIVE_WARNING_DAYS"]


def values(tmp_path: Path, **environment: str) -> list[str]:
    started = settings_started(tmp_path, NAMES, **environment)
    assert started.returncode == 0, started.stderr
    return started.stdout.strip().splitlines()[-1].split("|")


def test_off_by_default(tmp_path: Path) -> None:
    assert values(tmp_path) == ["0", "14"]


def test_set_from_the_environment(tmp_path: Path) -> None:
    assert values(tmp_path, INACTIVE_ACCOUNT_DAYS="365", INACTIVE_WARNING_DAYS="30") == [
        "365",
        "30",
    ]


@pytest.mark.parametrize(
    "environment",
    [
        {"INACTIVE_ACCOUNT_DAYS": "-1"},
        {"INACTIVE_ACCOUNT_DAYS": "10"},  # within the 14 days of warning
        {"INACTIVE_ACCOUNT_DAYS": "365", "INACTIVE_WARNING_DAYS": "0"},
    ],
)
def test_a_policy_that_cannot_warn_first_stops_the_start(
    tmp_path: Path, environment: dict[str, str]
) -> None:
    started = settings_started(tmp_path, NAMES, **environment)
    assert started.returncode != 0
    assert "INACTIVE_ACCOUNT_DAYS must be 0 (off) or more days than INACTIVE_WARNING_DAYS" in (
        started.stderr
    )
    assert "Traceback" not in started.stderr
