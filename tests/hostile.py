"""The corpus of hostile bodies (docs/api.md: "Errors", "Limits") that tests/test_hostile_bodies.py
sends to every /v1/ endpoint that takes a body, and each other API's tests to its own."""

import json

GUID_5000 = "9b024349-ccf0-5f69-a609-6b82873eab3c" + "a" * 4964


def nested(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


CORPUS: dict[str, bytes] = {
    "empty": b"",
    "null": b"null",
    "true": b"true",
    "number": b"42",
    "string": b'"text"',
    "array": b"[]",
    "array of objects": b'[{"feed_url": "https://example.com/feed"}]',
    "empty object": b"{}",
    "NUL byte": b"\x00",
    "NUL in a string": json.dumps({"username": "a\x00b", "new_guid": "\x00"}).encode(),
    "raw NUL in a string": b'{"username": "a\x00", "refresh_token": "\x00"}',
    "invalid utf-8": b"\xff\xfe\x00\x00",
    "invalid utf-8 in a string": b'{"username": "\xc3\x28", "new_feed_url": "\xc3\x28"}',
    "lone surrogate": b'{"username": "\\ud800", "new_feed_url": "https://x.example/\\udfff"}',
    "5,000-character guid": json.dumps(
        {"subscriptions": [{"feed_url": "https://example.com/f", "guid": GUID_5000}]}
        | {"new_guid": GUID_5000, "refresh_token": GUID_5000}
    ).encode(),
    "2,000-level nesting": nested(2000),
    "2,000-level nesting in a field": b'{"subscriptions": ' + b"[" * 2000 + b"]" * 2000 + b"}",
    "huge string": json.dumps({"username": "u" * 500_000, "new_feed_url": "h" * 500_000}).encode(),
    "huge number": b'{"is_subscribed": ' + b"9" * 100_000 + b"}",
    "wrong types": json.dumps(
        {
            "subscriptions": {"feed_url": 1},
            "username": ["a"],
            "password": {"p": 1},
            "refresh_token": 7,
            "new_feed_url": False,
            "new_guid": 12,
            "is_subscribed": "yes",
        }
    ).encode(),
    "NaN and Infinity": b'{"is_subscribed": NaN, "new_guid": Infinity, "username": -Infinity}',
    "duplicate keys": b'{"is_subscribed": true, "is_subscribed": "x"}',
    "trailing garbage": b'{"is_subscribed": true} trailing',
    "truncated": b'{"subscriptions": [{"feed_url": "https://example.com',
    "BOM then garbage": b"\xef\xbb\xbf\xef\xbb\xbf{",
    "server-owned fields": json.dumps(
        {
            "user": 1,
            "user_id": 1,
            "id": 1,
            "deleted": "2024-01-01T00:00:00.000Z",
            "status": "SUCCESS",
            "deletion_id": 1,
        }
    ).encode(),
}
