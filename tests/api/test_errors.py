"""Every error on a /v1/ path is the error object (docs/api.md: "Authentication", "Errors",
"Limits")."""

import json
import time
import uuid
from datetime import timedelta
from typing import Any

import jwt
import pytest
from django.conf import settings
from django.http import UnreadablePostError
from django.utils import timezone
from rest_framework.settings import api_settings
from rest_framework.test import APIClient

from accounts.active import password_mark
from accounts.services import refresh_token_for
from api.errors import body_not_received
from api.throttles import UserThrottle
from deletions.models import Deletion
from subscriptions.models import Subscription
from subscriptions.services import AddEntry, subscription_add_many
from tests.factories import UserFactory
from tests.helpers import assert_error

FEED = "https://podnews.net/rss"
MESSAGES = {
    401: "User not authorized",
    404: "Resource not found",
    405: "Input could not be validated",
    410: "Subscription has been deleted",
}
ONE_MIB = 1024 * 1024


def assert_validation_error(response: Any) -> dict[str, Any]:
    body = assert_error(response, 405)
    assert body["message"].startswith(MESSAGES[405])
    return body


def subscribe(user: Any, feed_url: str = FEED) -> Subscription:
    result = subscription_add_many(user=user, entries=[AddEntry(feed_url=feed_url)])
    assert not result.failure
    return result.success[0]


@pytest.fixture
def subscription(user: Any) -> Subscription:
    return subscribe(user)


@pytest.fixture
def deletion(user: Any, subscription: Subscription) -> Deletion:
    return Deletion.objects.create(
        user=user,
        subscription=subscription,
        guid=subscription.guid,
        status=Deletion.Status.FAILURE,
        message="The deletion process encountered an error and was rolled back",
        requested=timezone.now(),
    )


# --- 401 ----------------------------------------------------------------------------------------

OPERATIONS = ["add", "list", "read", "update", "deletion"]


def call(client: APIClient, operation: str, sub: Subscription, deletion: Deletion) -> Any:
    """One of the operations of the interface and the list, on resources `user` has."""
    if operation == "add":
        body = {"subscriptions": [{"feed_url": "https://example.com/feed.xml"}]}
        return client.post("/v1/subscriptions", body, format="json")
    if operation == "list":
        return client.get("/v1/subscriptions", {"since": "2000-01-01T00:00:00Z"})
    if operation == "read":
        return client.get(f"/v1/subscriptions/{sub.guid}")
    if operation == "update":
        return client.patch(
            f"/v1/subscriptions/{sub.guid}", {"is_subscribed": False}, format="json"
        )
    return client.get(f"/v1/deletions/{deletion.pk}")


def signed_token(user: Any, *, key: str | None = None, lifetime: int = 3600, **claims: Any) -> str:
    """An access token made by hand, so that one thing at a time can be wrong with it."""
    now = int(time.time())
    payload = {
        "token_type": "access",
        "exp": now + lifetime,
        "iat": now - 1,
        "jti": uuid.uuid4().hex,
        "user_id": str(user.pk),
        "pwd": password_mark(user.password),
        **claims,
    }
    return jwt.encode(payload, key or settings.SECRET_KEY, algorithm="HS256")


def with_header(value: str | None) -> APIClient:
    client = APIClient()
    if value is not None:
        client.credentials(HTTP_AUTHORIZATION=value)
    return client


@pytest.mark.parametrize("operation", OPERATIONS)
def test_each_operation_succeeds_with_a_hand_made_token(user, subscription, deletion, operation):
    """Control for the 401 tests below: the token builder itself makes good tokens."""
    client = with_header(f"Bearer {signed_token(user)}")

    response = call(client, operation, subscription, deletion)

    assert response.status_code == 200, response.content


BAD_HEADERS = {
    "missing": None,
    "empty": "",
    "scheme only": "Bearer",
    "scheme and space": "Bearer ",
    "basic": "Basic x",
    "basic with credentials": "Basic dXNlcjpwYXNz",
    "not a jwt": "Bearer not.a.jwt",
    "garbage": "Bearer !!!",
    "three parts": "Bearer a b",
    "very long": "Bearer " + "a" * 10_000,
    "latin-1": "Bearer \u00e9t\u00e9",
    "token without scheme": "{token}",
    "token twice": "Bearer {token} {token}",
}


@pytest.mark.parametrize("operation", OPERATIONS)
@pytest.mark.parametrize("header", BAD_HEADERS.values(), ids=BAD_HEADERS.keys())
def test_missing_or_malformed_authorization_is_401(user, subscription, deletion, operation, header):
    if header is not None:
        header = header.format(token=signed_token(user))

    response = call(with_header(header), operation, subscription, deletion)

    assert_error(response, 401, MESSAGES[401])
    assert response["WWW-Authenticate"].startswith("Bearer")


def forged(user: Any) -> str:
    return signed_token(user, key="another-key-that-is-long-enough-for-hs256-signing-00")


def expired(user: Any) -> str:
    return signed_token(user, lifetime=-60, iat=int(time.time()) - 3660)


def unsigned(user: Any) -> str:
    payload = jwt.decode(signed_token(user), options={"verify_signature": False})
    return jwt.encode(payload, key="", algorithm="none")


def tampered(user: Any) -> str:
    """A real token of another user whose payload now names `user`, signature kept."""
    someone: Any = UserFactory()
    header, _, signature = str(refresh_token_for(someone).access_token).split(".")
    _, payload, _ = signed_token(user).split(".")
    return f"{header}.{payload}.{signature}"


def refresh_as_access(user: Any) -> str:
    return str(refresh_token_for(user))


def of_missing_user(user: Any) -> str:
    return signed_token(user, user_id="999999999")


def of_user_id_that_is_not_an_id(user: Any) -> str:
    return signed_token(user, user_id="1; DROP TABLE auth_user")


def of_user_id_out_of_range(user: Any) -> str:
    return signed_token(user, user_id=str(2**70))


def without_user_id(user: Any) -> str:
    payload = jwt.decode(signed_token(user), options={"verify_signature": False})
    del payload["user_id"]
    return jwt.encode(payload, settings.SECRET_KEY, algorithm="HS256")


def of_inactive_user(user: Any) -> str:
    user.is_active = False
    user.save()
    return signed_token(user)


def without_password_claim(user: Any) -> str:
    payload = jwt.decode(signed_token(user), options={"verify_signature": False})
    del payload["pwd"]
    return jwt.encode(payload, settings.SECRET_KEY, algorithm="HS256")


def of_another_password(user: Any) -> str:
    return signed_token(user, pwd=password_mark("a password the account never had"))


def without_expiry(user: Any) -> str:
    payload = jwt.decode(signed_token(user), options={"verify_signature": False})
    del payload["exp"]
    return jwt.encode(payload, settings.SECRET_KEY, algorithm="HS256")


BAD_TOKENS = [
    forged,
    expired,
    unsigned,
    tampered,
    refresh_as_access,
    of_missing_user,
    of_user_id_that_is_not_an_id,
    of_user_id_out_of_range,
    without_user_id,
    of_inactive_user,
    without_password_claim,
    of_another_password,
    without_expiry,
]


@pytest.mark.parametrize("operation", OPERATIONS)
@pytest.mark.parametrize("make_token", BAD_TOKENS, ids=lambda f: f.__name__)
def test_bad_token_is_401(user, subscription, deletion, operation, make_token):
    client = with_header(f"Bearer {make_token(user)}")

    response = call(client, operation, subscription, deletion)

    assert_error(response, 401, MESSAGES[401])
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_rejected_update_changes_nothing(user, subscription):
    client = with_header(f"Bearer {forged(user)}")

    client.patch(f"/v1/subscriptions/{subscription.guid}", {"is_subscribed": False}, format="json")

    subscription.refresh_from_db()
    assert subscription.is_subscribed is True


def test_rejected_add_stores_nothing(db):
    response = APIClient().post(
        "/v1/subscriptions", {"subscriptions": [{"feed_url": FEED}]}, format="json"
    )

    assert_error(response, 401)
    assert not Subscription.objects.exists()


# --- 404 ----------------------------------------------------------------------------------------

UNKNOWN_PATHS = [
    "/v1/nothing-here",
    "/v1/subscriptions/9b024349-ccf0-5f69-a609-6b82873eab3c/extra",
    "/v1/capabilities/more",
    "/v1/auth",
    "/v1/auth/unknown",
    "/v1/deletions/1/status",
    "/v1/" + "a" * 5000,
    "/v1/%00",
    "/v1/%FF%FE",
]


@pytest.mark.parametrize("method", ["get", "post", "put", "patch", "delete", "options"])
@pytest.mark.parametrize("path", UNKNOWN_PATHS)
@pytest.mark.parametrize("authenticated", [True, False], ids=["token", "anonymous"])
def test_unknown_path_is_404_for_every_method(api, anon, method, path, authenticated):
    client = api if authenticated else anon

    response = getattr(client, method)(path)

    assert_error(response, 404, MESSAGES[404])


def test_unknown_path_with_a_body_is_still_404(api):
    response = api.post("/v1/nothing-here", "not json", content_type="text/plain")

    assert_error(response, 404, MESSAGES[404])


def test_missing_subscription_is_404(api):
    guid = uuid.uuid4()

    got = api.get(f"/v1/subscriptions/{guid}")
    patched = api.patch(f"/v1/subscriptions/{guid}", {"is_subscribed": False}, format="json")

    assert_error(got, 404, MESSAGES[404])
    assert_error(patched, 404, MESSAGES[404])


def test_another_users_subscription_is_404_like_a_missing_one(api, other_user):
    theirs = subscribe(other_user)
    missing = api.get(f"/v1/subscriptions/{uuid.uuid4()}")

    got = api.get(f"/v1/subscriptions/{theirs.guid}")
    patched = api.patch(f"/v1/subscriptions/{theirs.guid}", {"is_subscribed": False}, format="json")

    assert_error(got, 404)
    assert got.content == missing.content
    assert patched.status_code == 404
    assert patched.content == missing.content
    theirs.refresh_from_db()
    assert theirs.is_subscribed is True


# --- 405 ----------------------------------------------------------------------------------------

WRONG_METHODS = [
    ("put", "/v1/subscriptions/{guid}"),
    ("post", "/v1/subscriptions/{guid}"),
    ("put", "/v1/subscriptions"),
    ("patch", "/v1/subscriptions"),
    ("delete", "/v1/subscriptions"),
    ("post", "/v1/deletions/{deletion}"),
    ("put", "/v1/deletions/{deletion}"),
    ("patch", "/v1/deletions/{deletion}"),
    ("delete", "/v1/deletions/{deletion}"),
    ("post", "/v1/capabilities"),
    ("delete", "/v1/capabilities"),
    ("get", "/v1/auth/login"),
    ("put", "/v1/auth/login"),
    ("get", "/v1/auth/refresh"),
    ("get", "/v1/auth/logout"),
]


@pytest.mark.parametrize(("method", "path"), WRONG_METHODS)
def test_unsupported_method_is_405_with_allow(api, subscription, deletion, method, path):
    path = path.format(guid=subscription.guid, deletion=deletion.pk)

    response = getattr(api, method)(path, {"is_subscribed": False}, format="json")

    assert_error(response, 405)
    allowed = {m.strip().upper() for m in response["Allow"].split(",")}
    assert allowed
    assert method.upper() not in allowed


def test_unsupported_method_changes_nothing(api, subscription):
    api.put(f"/v1/subscriptions/{subscription.guid}", {"is_subscribed": False}, format="json")

    subscription.refresh_from_db()
    assert subscription.is_subscribed is True


BAD_GUIDS = [
    "not-a-uuid",
    "123",
    "9b024349-ccf0-5f69-a609-6b82873eab3",
    "9b024349-ccf0-5f69-a609-6b82873eab3cc",
    "g" * 32,
    "%00",
    "%20",
    "%ED%A0%80",
    "x" * 5000,
]


@pytest.mark.parametrize("guid", BAD_GUIDS)
def test_path_guid_that_is_not_a_uuid_is_405(api, guid):
    got = api.get(f"/v1/subscriptions/{guid}")
    patched = api.patch(f"/v1/subscriptions/{guid}", {"is_subscribed": False}, format="json")

    assert_validation_error(got)
    assert_validation_error(patched)


def test_too_many_entries_is_405_naming_the_limit(api):
    entries = [{"feed_url": f"https://example.com/{n}"} for n in range(501)]

    response = api.post("/v1/subscriptions", {"subscriptions": entries}, format="json")

    body = assert_error(response, 405)
    assert "500" in body["message"]
    assert not Subscription.objects.exists()


def test_the_entry_limit_itself_is_accepted(api):
    entries = [{"feed_url": f"https://example.com/{n}"} for n in range(500)]

    response = api.post("/v1/subscriptions", {"subscriptions": entries}, format="json")

    assert response.status_code == 200, response.content[:500]
    assert len(response.json()["success"]) == 500


def test_too_long_url_in_patch_is_405_naming_the_limit(api, subscription):
    url = "https://example.com/" + "a" * 2029

    response = api.patch(
        f"/v1/subscriptions/{subscription.guid}", {"new_feed_url": url}, format="json"
    )

    body = assert_error(response, 405)
    assert "2048" in body["message"].replace(",", "")
    subscription.refresh_from_db()
    assert subscription.feed_url == FEED


# --- 410 ----------------------------------------------------------------------------------------


def test_deleted_subscription_is_410_to_get_and_patch(api, subscription):
    Subscription.objects.filter(pk=subscription.pk).update(
        deleted=timezone.now(), is_subscribed=False
    )

    got = api.get(f"/v1/subscriptions/{subscription.guid}")
    patched = api.patch(
        f"/v1/subscriptions/{subscription.guid}", {"is_subscribed": True}, format="json"
    )

    assert_error(got, 410, MESSAGES[410])
    assert_error(patched, 410, MESSAGES[410])
    subscription.refresh_from_db()
    assert subscription.deleted is not None


# --- 413 ----------------------------------------------------------------------------------------


def padded(body: dict[str, Any], size: int) -> bytes:
    """`body` as JSON, padded with trailing whitespace to exactly `size` bytes."""
    raw = json.dumps(body).encode()
    return raw + b" " * (size - len(raw))


def test_body_over_one_mib_is_413_naming_the_limit(api, subscription):
    body = padded({"subscriptions": [{"feed_url": FEED}]}, ONE_MIB + 1)

    posted = api.post("/v1/subscriptions", body, content_type="application/json")
    patched = api.patch(
        f"/v1/subscriptions/{subscription.guid}",
        padded({"is_subscribed": False}, ONE_MIB + 1),
        content_type="application/json",
    )

    for response in (posted, patched):
        message = assert_error(response, 413)["message"]
        assert "1048576" in message.replace(",", "") or "1 MiB" in message
    subscription.refresh_from_db()
    assert subscription.is_subscribed is True


def test_body_of_exactly_one_mib_is_accepted(api):
    body = padded({"subscriptions": [{"feed_url": FEED}]}, ONE_MIB)

    response = api.post("/v1/subscriptions", body, content_type="application/json")

    assert response.status_code == 200, response.content[:500]
    assert response.json()["success"][0]["feed_url"] == FEED


def test_oversized_body_of_many_entries_is_413_and_stores_nothing(api):
    entries = [{"feed_url": "https://example.com/" + "a" * 2000} for _ in range(600)]

    response = api.post("/v1/subscriptions", {"subscriptions": entries}, format="json")

    assert_error(response, 413)
    assert not Subscription.objects.exists()


# --- 415 ----------------------------------------------------------------------------------------

NOT_JSON = [
    ("text/plain", '{"subscriptions": [{"feed_url": "https://podnews.net/rss"}]}'),
    ("application/x-www-form-urlencoded", "subscriptions=https%3A%2F%2Fpodnews.net%2Frss"),
    ("application/xml", "<subscriptions/>"),
    ("text/x-opml", "<opml/>"),
    (
        "multipart/form-data; boundary=x",
        '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\nb\r\n--x--',
    ),
]


@pytest.mark.parametrize(("content_type", "body"), NOT_JSON, ids=[c for c, _ in NOT_JSON])
def test_body_that_is_not_json_is_415(api, subscription, content_type, body):
    posted = api.post("/v1/subscriptions", body, content_type=content_type)
    patched = api.patch(f"/v1/subscriptions/{subscription.guid}", body, content_type=content_type)

    assert_error(posted, 415)
    assert_error(patched, 415)
    assert Subscription.objects.count() == 1


def test_json_with_a_charset_is_accepted(api):
    response = api.post(
        "/v1/subscriptions",
        json.dumps({"subscriptions": [{"feed_url": FEED}]}),
        content_type="application/json; charset=utf-8",
    )

    assert response.status_code == 200, response.content
    assert response.json()["success"][0]["feed_url"] == FEED


# --- No 500, whatever the input ---------------------------------------------------------------

DEEP_ARRAYS = b"[" * 100_000 + b"]" * 100_000
DEEP_OBJECTS = b'{"a":' * 100_000 + b"1" + b"}" * 100_000
HUGE_INT = b"9" * 5000

# Bodies that cannot be validated as a whole: 405, and nothing stored.
BAD_ADD_BODIES = {
    "empty": b"",
    "whitespace": b"   ",
    "truncated": b'{"subscriptions": [',
    "not json": b"subscriptions",
    "invalid utf-8": b"\xff\xfe\xfd",
    "invalid utf-8 in a string": b'{"subscriptions": [{"feed_url": "https://a.example/\xff"}]}',
    "utf-16": json.dumps({"subscriptions": [{"feed_url": FEED}]}).encode("utf-16"),
    "raw NUL byte in a string": b'{"subscriptions": [{"feed_url": "https://a.example/\x00"}]}',
    "raw control byte in a string": b'{"subscriptions": [{"feed_url": "https://a.example/\x01"}]}',
    "NaN": b"NaN",
    "NaN subscriptions": b'{"subscriptions": NaN}',
    "NaN feed_url": b'{"subscriptions": [{"feed_url": NaN}]}',
    "Infinity feed_url": b'{"subscriptions": [{"feed_url": Infinity}]}',
    "-Infinity feed_url": b'{"subscriptions": [{"feed_url": -Infinity}]}',
    "overflowing float": b'{"subscriptions": [{"feed_url": 1e999}]}',
    "huge integer": b'{"subscriptions": [{"feed_url": ' + HUGE_INT + b"}]}",
    "huge integer subscriptions": b'{"subscriptions": ' + HUGE_INT + b"}",
    "deeply nested arrays": DEEP_ARRAYS,
    "deeply nested objects": DEEP_OBJECTS,
    "deeply nested subscriptions": b'{"subscriptions": ' + DEEP_ARRAYS + b"}",
    "null": b"null",
    "true": b"true",
    "number": b"42",
    "string": b'"https://podnews.net/rss"',
    "array": b'[{"feed_url": "https://podnews.net/rss"}]',
    "empty object": b"{}",
    "other key": b'{"subscription": [{"feed_url": "https://podnews.net/rss"}]}',
    "subscriptions null": b'{"subscriptions": null}',
    "subscriptions object": b'{"subscriptions": {"feed_url": "https://podnews.net/rss"}}',
    "subscriptions string": b'{"subscriptions": "https://podnews.net/rss"}',
    "subscriptions number": b'{"subscriptions": 1}',
    "entry null": b'{"subscriptions": [null]}',
    "entry string": b'{"subscriptions": ["https://podnews.net/rss"]}',
    "entry array": b'{"subscriptions": [[]]}',
    "entry number": b'{"subscriptions": [1]}',
    "entry empty": b'{"subscriptions": [{}]}',
    "entry guid only": b'{"subscriptions": [{"guid": "9b024349-ccf0-5f69-a609-6b82873eab3c"}]}',
    "feed_url null": b'{"subscriptions": [{"feed_url": null}]}',
    "feed_url number": b'{"subscriptions": [{"feed_url": 1}]}',
    "feed_url true": b'{"subscriptions": [{"feed_url": true}]}',
    "feed_url array": b'{"subscriptions": [{"feed_url": ["https://podnews.net/rss"]}]}',
    "feed_url object": b'{"subscriptions": [{"feed_url": {"url": "https://podnews.net/rss"}}]}',
    "good entry then bad entry": (
        b'{"subscriptions": [{"feed_url": "https://podnews.net/rss"}, {"feed_url": 5}]}'
    ),
    "BOM": b"\xef\xbb\xbf" + json.dumps({"subscriptions": [{"feed_url": FEED}]}).encode(),
}


@pytest.mark.parametrize("body", BAD_ADD_BODIES.values(), ids=BAD_ADD_BODIES.keys())
def test_add_body_that_cannot_be_validated_is_405(api, body):
    response = api.post("/v1/subscriptions", body, content_type="application/json")

    assert_validation_error(response)
    assert not Subscription.objects.exists()


def entry(**fields: Any) -> bytes:
    return json.dumps({"subscriptions": [fields]}).encode()


# Entries that are reported in `failure`, with status 200: never a 500.
BAD_ENTRIES = {
    "no protocol": entry(feed_url="podnews.net/rss"),
    "empty url": entry(feed_url=""),
    "ftp": entry(feed_url="ftp://podnews.net/rss"),
    "javascript": entry(feed_url="javascript:alert(1)"),
    "no host": entry(feed_url="https:///rss"),
    "bad ipv6": entry(feed_url="http://[::1/rss"),
    "port out of range": entry(feed_url="http://podnews.net:99999/rss"),
    "port not a number": entry(feed_url="http://podnews.net:port/rss"),
    "port zero": entry(feed_url="http://podnews.net:0/rss"),
    "space": entry(feed_url="https://podnews.net/my rss"),
    "NUL escape": entry(feed_url="https://podnews.net/\u0000"),
    "control escape": entry(feed_url="https://podnews.net/\u001f"),
    "line separator": entry(feed_url="https://podnews.net/\u2028"),
    "too long": entry(feed_url="https://podnews.net/" + "a" * 2029),
    "too long in characters": entry(feed_url="https://podnews.net/" + "é" * 2029),
    "guid not a uuid": entry(feed_url=FEED, guid="not-a-uuid"),
    "guid NUL": entry(feed_url=FEED, guid="\u0000"),
    "guid number": entry(feed_url=FEED, guid=5),
    "guid object": entry(feed_url=FEED, guid={"a": 1}),
    "guid array": entry(feed_url=FEED, guid=[]),
    "guid true": entry(feed_url=FEED, guid=True),
    "guid huge": entry(feed_url=FEED, guid="9" * 5000),
}


@pytest.mark.parametrize("body", BAD_ENTRIES.values(), ids=BAD_ENTRIES.keys())
def test_bad_entry_is_a_failure_not_an_error(api, body):
    sent = json.loads(body)["subscriptions"][0]

    response = api.post("/v1/subscriptions", body, content_type="application/json")

    assert response.status_code == 200, response.content[:500]
    answer = response.json()
    assert answer.get("success", []) == []
    [failure] = answer["failure"]
    assert failure["feed_url"] == sent["feed_url"]
    assert isinstance(failure["message"], str)
    assert failure["message"]
    assert not Subscription.objects.exists()


def test_bad_entry_beside_good_ones_leaves_them_added(api):
    entries = [
        {"feed_url": FEED},
        {"feed_url": "https://podnews.net/\u0000"},
        {"feed_url": "podnews.net/other"},
    ]

    response = api.post("/v1/subscriptions", {"subscriptions": entries}, format="json")

    assert response.status_code == 200, response.content[:500]
    answer = response.json()
    assert [s["feed_url"] for s in answer["success"]] == [FEED]
    assert [f["feed_url"] for f in answer["failure"]] == [e["feed_url"] for e in entries[1:]]
    assert Subscription.objects.count() == 1


# A lone surrogate can be read from JSON but not stored or echoed as UTF-8: reported as a failure
# (escaped in the answer) or refused as a whole, never a 500.
SURROGATES = {
    "feed_url": b'{"subscriptions": [{"feed_url": "https://podnews.net/\\ud800"}]}',
    "feed_url only": b'{"subscriptions": [{"feed_url": "\\ud800"}]}',
    "low surrogate": b'{"subscriptions": [{"feed_url": "https://podnews.net/\\udfff"}]}',
    "guid": b'{"subscriptions": [{"feed_url": "https://podnews.net/rss", "guid": "\\ud800"}]}',
    "key": b'{"subscriptions": [{"feed_url": "https://podnews.net/rss", "\\ud800": 1}]}',
}


@pytest.mark.parametrize("body", SURROGATES.values(), ids=SURROGATES.keys())
def test_lone_surrogate_in_an_add_is_never_a_500(api, body):
    response = api.post("/v1/subscriptions", body, content_type="application/json")

    if response.status_code == 405:
        assert_validation_error(response)
        assert not Subscription.objects.exists()
    else:
        assert response.status_code == 200, response.content[:500]
        answer = json.loads(response.content)
        stored = Subscription.objects.values_list("feed_url", flat=True)
        assert all("\ud800" not in url and "\udfff" not in url for url in stored)
        assert len(answer.get("success", [])) + len(answer.get("failure", [])) == 1


# Bodies of a PATCH that cannot be validated: 405, and the subscription unchanged.
BAD_PATCH_BODIES = {
    "empty": b"",
    "truncated": b'{"is_subscribed": ',
    "not json": b"is_subscribed=false",
    "invalid utf-8": b"\xff\xfe\xfd",
    "invalid utf-8 in a string": b'{"new_feed_url": "https://a.example/\xff"}',
    "raw NUL byte in a string": b'{"new_feed_url": "https://a.example/\x00"}',
    "NaN": b"NaN",
    "NaN field": b'{"is_subscribed": NaN}',
    "Infinity field": b'{"new_feed_url": Infinity}',
    "overflowing float": b'{"new_guid": 1e999}',
    "huge integer": b'{"is_subscribed": ' + HUGE_INT + b"}",
    "deeply nested arrays": DEEP_ARRAYS,
    "deeply nested objects": DEEP_OBJECTS,
    "deeply nested field": b'{"new_feed_url": ' + DEEP_ARRAYS + b"}",
    "null": b"null",
    "array": b'[{"is_subscribed": false}]',
    "string": b'"false"',
    "number": b"0",
    "empty object": b"{}",
    "unknown field": b'{"unknown": 1}',
    "unknown with known field": b'{"is_subscribed": false, "feed_url": "https://a.example/"}',
    "is_subscribed null": b'{"is_subscribed": null}',
    "is_subscribed string": b'{"is_subscribed": "false"}',
    "is_subscribed number": b'{"is_subscribed": 0}',
    "is_subscribed array": b'{"is_subscribed": [false]}',
    "new_guid null": b'{"new_guid": null}',
    "new_guid not a uuid": b'{"new_guid": "not-a-uuid"}',
    "new_guid number": b'{"new_guid": 5}',
    "new_guid object": b'{"new_guid": {}}',
    "new_guid NUL": b'{"new_guid": "\\u0000"}',
    "new_guid surrogate": b'{"new_guid": "\\ud800"}',
    "new_guid current": b'{"new_guid": "9b024349-ccf0-5f69-a609-6b82873eab3c"}',
    "new_feed_url null": b'{"new_feed_url": null}',
    "new_feed_url number": b'{"new_feed_url": 1}',
    "new_feed_url array": b'{"new_feed_url": ["https://a.example/"]}',
    "new_feed_url empty": b'{"new_feed_url": ""}',
    "new_feed_url no protocol": b'{"new_feed_url": "a.example/rss"}',
    "new_feed_url ftp": b'{"new_feed_url": "ftp://a.example/rss"}',
    "new_feed_url no host": b'{"new_feed_url": "https:///rss"}',
    "new_feed_url bad ipv6": b'{"new_feed_url": "http://[::1/rss"}',
    "new_feed_url bad port": b'{"new_feed_url": "http://a.example:99999/rss"}',
    "new_feed_url space": b'{"new_feed_url": "https://a.example/my rss"}',
    "new_feed_url NUL": b'{"new_feed_url": "https://a.example/\\u0000"}',
    "new_feed_url surrogate": b'{"new_feed_url": "https://a.example/\\ud800"}',
    "new_feed_url surrogate only": b'{"new_feed_url": "\\ud800"}',
    "surrogate key": b'{"is_subscribed": false, "\\ud800": 1}',
}


@pytest.mark.parametrize("body", BAD_PATCH_BODIES.values(), ids=BAD_PATCH_BODIES.keys())
def test_patch_body_that_cannot_be_validated_is_405(api, subscription, body):
    before = Subscription.objects.values().get(pk=subscription.pk)

    response = api.patch(
        f"/v1/subscriptions/{subscription.guid}", body, content_type="application/json"
    )

    assert_error(response, 405)
    assert Subscription.objects.values().get(pk=subscription.pk) == before


@pytest.mark.parametrize(
    "body",
    [
        {"new_feed_url": "podnews.net/rss"},
        {"new_feed_url": "ftp://podnews.net/rss"},
        {"new_guid": "9b024349-ccf0-5f69-a609-6b82873eab3c"},
        {"is_subscribed": "no"},
    ],
    ids=["no protocol", "ftp", "same guid", "not a boolean"],
)
def test_patch_validation_error_carries_the_405_message(api, subscription, body):
    """Section 4 fixes the 405 message; what was wrong goes in `errors`, naming the field."""
    response = api.patch(f"/v1/subscriptions/{subscription.guid}", body, format="json")

    error = assert_validation_error(response)
    assert set(error.get("errors", body)) <= set(body)


def test_user_throttle_answers_429_naming_the_limit(api, other_api, deletion):
    rate = str(api_settings.DEFAULT_THROTTLE_RATES["user"])  # 1200/min by default
    for _ in range(int(rate.split("/")[0])):
        assert api.get(f"/v1/deletions/{deletion.pk}").status_code == 200

    response = api.get(f"/v1/deletions/{deletion.pk}")

    body = assert_error(response, 429)
    assert rate in body["message"]
    assert int(response["Retry-After"]) > 0
    assert other_api.get(f"/v1/deletions/{deletion.pk}").status_code == 404


def test_a_throttle_window_opens_at_the_clients_first_request(api, deletion, monkeypatch):
    """A window aligned to the clock would reset at the minute: twice the rate across it."""
    monkeypatch.setattr(UserThrottle, "THROTTLE_RATES", {"user": "3/min", "login": "10/min"})
    now = [1_000_019.5]  # half a second before a multiple of 60
    monkeypatch.setattr(time, "time", lambda: now[0])
    path = f"/v1/deletions/{deletion.pk}"
    for _ in range(3):
        assert api.get(path).status_code == 200

    now[0] = 1_000_020.5
    across_the_minute = api.get(path)
    now[0] = 1_000_079.6
    after_the_window = api.get(path)

    assert_error(across_the_minute, 429)
    assert across_the_minute["Retry-After"] == "59"
    assert after_the_window.status_code == 200


def test_access_token_past_its_lifetime_is_401(user, subscription):
    """A token simplejwt itself issued, once its lifetime is over."""
    token = refresh_token_for(user).access_token
    token.set_exp(lifetime=-timedelta(seconds=1))

    response = with_header(f"Bearer {token}").get(f"/v1/subscriptions/{subscription.guid}")

    assert_error(response, 401, MESSAGES[401])


def test_unsupported_method_is_405_with_the_standard_message_and_allow(api):
    response = api.put("/v1/subscriptions/9b024349-ccf0-5f69-a609-6b82873eab3c", {}, format="json")

    body = assert_error(response, 405)
    assert body["message"] == "Input could not be validated: PUT is not allowed here"
    assert "PATCH" in response["Allow"]


@pytest.mark.parametrize("debug", [False, True])
def test_a_bad_host_header_on_an_api_path_answers_the_error_object(anon, settings, debug):
    settings.DEBUG = debug
    settings.ALLOWED_HOSTS = ["api.example.com"]

    response = anon.get("/v1/capabilities", HTTP_HOST="evil.example.com")

    assert_error(response, 400, "Bad request: host not allowed")


@pytest.mark.parametrize(
    "path", ["/v1/subscriptions", "/v1/subscriptions/{guid}", "/v1/deletions/1"]
)
def test_over_a_thousand_query_parameters_is_405_never_500(api, subscription, path):
    query = "&".join(f"x{i}=1" for i in range(1001))

    response = api.get(f"{path.format(guid=subscription.guid)}?{query}")

    assert_error(response, 405, "Input could not be validated: too many parameters, at most 1000")


def _unread(cause: OSError) -> Exception:
    """What Django raises for a body it could not read: request.body wraps read()'s own."""
    try:
        try:
            try:
                raise cause
            except OSError as exc:
                raise UnreadablePostError(*exc.args) from exc
        except OSError as exc:
            raise UnreadablePostError(*exc.args) from exc
    except UnreadablePostError as exc:
        return exc


@pytest.mark.parametrize(
    ("cause", "expected"),
    [
        (BlockingIOError(11, "Resource temporarily unavailable"), 408),  # SO_RCVTIMEO
        (TimeoutError("timed out"), 408),
        (ConnectionResetError(104, "Connection reset by peer"), 400),
    ],
)
def test_a_body_that_could_not_be_read_is_the_clients_error(cause: OSError, expected: int):
    status, message = body_not_received(_unread(cause))  # type: ignore[misc]
    assert status == expected
    assert ("CLIENT_TIMEOUT" in message) == (expected == 408)
    assert body_not_received(ValueError("not a body")) is None
