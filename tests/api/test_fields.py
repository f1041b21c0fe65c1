"""The timestamp format every response uses (docs/api.md: RFC 3339, UTC, milliseconds, Z)."""

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from api.fields import format_timestamp


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (datetime(2023, 2, 23, 14, 0, tzinfo=UTC), "2023-02-23T14:00:00.000Z"),
        (datetime(2023, 2, 23, 14, 0, 0, 999999, tzinfo=UTC), "2023-02-23T14:00:00.999Z"),
        (datetime(2023, 2, 23, 14, 0, 0, 1500, tzinfo=UTC), "2023-02-23T14:00:00.001Z"),
        (
            datetime(2024, 1, 1, 0, 30, tzinfo=timezone(timedelta(hours=1))),
            "2023-12-31T23:30:00.000Z",
        ),
        (datetime(999, 1, 2, 3, 4, 5, tzinfo=UTC), "0999-01-02T03:04:05.000Z"),
    ],
)
def test_timestamps_are_utc_with_milliseconds_truncated_and_z(value, shown):
    assert format_timestamp(value) == shown


# Within a day of either end of datetime's range, UTC would not fit.
@given(
    st.datetimes(datetime(1, 1, 2), datetime(9999, 12, 30), timezones=st.timezones()),
)
def test_any_aware_timestamp_is_its_utc_isoformat_in_milliseconds(value):
    utc = value.astimezone(UTC)
    assert format_timestamp(value) == utc.isoformat(timespec="milliseconds")[:-6] + "Z"
