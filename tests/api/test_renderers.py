"""The API's JSON renderer makes the bytes DRF's own renderer made, faster."""

import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework import renderers
from rest_framework.exceptions import ErrorDetail

from api.renderers import JSONRenderer


class EscapingRenderer(renderers.JSONRenderer):
    ensure_ascii = True


def drf_bytes(data: Any, accepted: str | None = None) -> bytes:
    """What DRF's renderer makes; ASCII-escaped where the data cannot be UTF-8."""
    try:
        return renderers.JSONRenderer().render(data, accepted)
    except UnicodeEncodeError:
        return EscapingRenderer().render(data, accepted)


timestamps = (
    st.datetimes(timezones=st.sampled_from([UTC, timezone(timedelta(hours=-5))])) | st.datetimes()
)
leaves = (
    st.none()
    | st.booleans()
    | st.integers()  # beyond 64 bits too
    | st.text()
    | st.text(alphabet=st.characters(codec=None, categories=["Cs", "Zl", "Zp", "Cc"]))
    | st.text().map(ErrorDetail)
    | st.uuids()
    | timestamps
)
values = st.recursive(
    leaves,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=8), inner, max_size=4)
        | st.dictionaries(st.integers(), inner, max_size=2)
    ),
    max_leaves=20,
)


@settings(max_examples=500, deadline=None)
@given(data=values)
def test_every_value_the_api_renders_gets_drfs_bytes(data):
    assert JSONRenderer().render(data) == drf_bytes(data)


@pytest.mark.parametrize(
    "data",
    [
        {"feed_url": "https://a.example/\ud800", "message": "Feed URL contains ..."},
        {"line": "a\u2028b\u2029c"},
        {"guid": uuid.UUID(int=1), "at": datetime(2023, 2, 23, 14, 0, 0, 123456, tzinfo=UTC)},
        {"nested": [{"deep": [1, [2, [3]]]}], 7: "int key"},
        [],
        "text",
    ],
)
def test_named_cases_get_drfs_bytes(data):
    assert JSONRenderer().render(data) == drf_bytes(data)


def test_an_indent_asked_for_is_drfs():
    data = {"a": [1, {"b": "ü"}]}
    accepted = "application/json; indent=4"

    assert JSONRenderer().render(data, accepted) == drf_bytes(data, accepted)
    assert b"\n    " in JSONRenderer().render(data, accepted)


def test_nothing_renders_as_no_bytes():
    assert JSONRenderer().render(None) == b""
