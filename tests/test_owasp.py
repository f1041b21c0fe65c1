"""The OWASP API Security Top 10 (2023) items that apply to this service, one section each.

API4 (resource consumption) lives with the limits in test_errors.py, test_hostile_bodies.py and
the list tests; API2's token checks in test_errors.py and test_auth.py.
"""

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from deletions.models import Deletion
from subscriptions.models import Subscription, SubscriptionFeed, SubscriptionGuid
from tests.helpers import assert_error, subscribe

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[1]


def snapshot() -> list[Any]:
    return [
        list(model.objects.order_by("pk").values())
        for model in (Subscription, SubscriptionGuid, SubscriptionFeed, Deletion)
    ]


@pytest.fixture
def theirs(other_user: Any) -> dict[str, Any]:
    """Another user's subscription, with an earlier guid, and a deletion of another one."""
    sub = subscribe(other_user, "https://example.com/theirs")
    old_guid = sub.guid
    from subscriptions.services import SubscriptionUpdate, subscription_update

    sub = subscription_update(
        user=other_user, guid=old_guid, change=SubscriptionUpdate(new_guid=uuid.uuid4())
    )
    gone = subscribe(other_user, "https://example.com/theirs-deleted")
    deletion = Deletion.objects.create(
        user=other_user, subscription=gone, guid=gone.guid, requested=gone.subscription_changed
    )
    return {"guid": sub.guid, "old_guid": old_guid, "deletion": deletion.pk}


# --- API1: object-level authorization ----------------------------------------------------------

OBJECT_CALLS = {
    "read": lambda api, guid: api.get(f"/v1/subscriptions/{guid}"),
    "update": lambda api, guid: api.patch(
        f"/v1/subscriptions/{guid}", {"is_subscribed": False}, format="json"
    ),
    "rename": lambda api, guid: api.patch(
        f"/v1/subscriptions/{guid}", {"new_guid": str(uuid.uuid4())}, format="json"
    ),
    "delete": lambda api, guid: api.delete(f"/v1/subscriptions/{guid}"),
}


@pytest.mark.parametrize("call", OBJECT_CALLS.values(), ids=OBJECT_CALLS.keys())
@pytest.mark.parametrize("which", ["guid", "old_guid"])
def test_api1_another_users_guid_is_404_like_a_missing_one_and_changes_nothing(
    api, theirs, call, which
):
    before = snapshot()

    response = call(api, theirs[which])
    missing = call(api, uuid.uuid4())

    assert_error(response, 404, "Resource not found")
    assert response.content == missing.content
    assert snapshot() == before


def test_api1_another_users_deletion_id_is_404_like_a_missing_one(api, theirs):
    response = api.get(f"/v1/deletions/{theirs['deletion']}")

    assert_error(response, 404, "Resource not found")
    assert response.content == api.get("/v1/deletions/999999").content


def test_api1_adding_another_users_guid_makes_my_own_subscription(api, user, theirs):
    """A guid is only unique per user: sending theirs names nothing of theirs."""
    entry = {"feed_url": "https://example.com/mine", "guid": str(theirs["guid"])}
    before = [row for row in snapshot()[0] if row["user_id"] != user.pk]

    response = api.post("/v1/subscriptions", {"subscriptions": [entry]}, format="json")

    assert response.status_code == 200
    assert Subscription.objects.get(user=user).guid == theirs["guid"]
    assert [row for row in snapshot()[0] if row["user_id"] != user.pk] == before


def test_api1_lists_hold_only_the_callers_rows(api, user, theirs):
    subscribe(user, "https://example.com/mine")

    body = api.get("/v1/subscriptions", {"since": "2000-01-01T00:00:00Z"}).json()

    assert [item["feed_url"] for item in body["subscriptions"]] == ["https://example.com/mine"]
    assert body["total"] == 1


# --- API2: broken authentication -----------------------------------------------------------------

PUBLIC = {
    ("get", "/v1/capabilities"),
    ("post", "/v1/auth/login"),
    ("post", "/v1/auth/refresh"),
    ("post", "/v1/auth/logout"),  # authenticated by the refresh token it revokes
}


def test_api2_every_other_operation_of_the_document_is_401_without_a_token(
    anon, user, other_user, theirs
):
    mine = subscribe(user, "https://example.com/mine")
    document = json.loads(anon.get("/v1/openapi.json").content)
    before = snapshot()
    checked = []

    for path, item in document["paths"].items():
        for method, operation in item.items():
            if (method, path) in PUBLIC:
                assert {} in operation.get("security", [{}]) or not operation.get("security")
                continue
            url = path.format(guid=mine.guid, id=1)
            response = getattr(anon, method)(url, {}, format="json")
            assert_error(response, 401, "User not authorized")
            assert response["WWW-Authenticate"].startswith("Bearer")
            checked.append((method, path))

    assert set(checked) == {
        ("get", "/v1/subscriptions.opml"),
        ("post", "/v1/subscriptions.opml"),
        ("post", "/v1/subscriptions"),
        ("get", "/v1/subscriptions"),
        ("get", "/v1/subscriptions/{guid}"),
        ("patch", "/v1/subscriptions/{guid}"),
        ("delete", "/v1/subscriptions/{guid}"),
        ("get", "/v1/deletions/{id}"),
    }
    assert snapshot() == before


@pytest.mark.parametrize("path", ["/v1/openapi.json", "/v1/openapi.yaml", "/v1/docs/"])
def test_api2_the_documents_are_public(anon, path):
    assert anon.get(path).status_code == 200


# --- API3: object property-level authorization ---------------------------------------------------

SERVER_FIELDS = {
    "user": 1,
    "user_id": 1,
    "id": 1,
    "deleted": "2024-01-01T00:00:00.000Z",
    "subscription_changed": "2000-01-01T00:00:00.000Z",
    "guid_changed": "2000-01-01T00:00:00.000Z",
    "guid": "9b024349-ccf0-5f69-a609-6b82873eab3c",
    "status": "SUCCESS",
    "deletion_id": 1,
}


@pytest.mark.parametrize(("field", "value"), SERVER_FIELDS.items())
def test_api3_a_patch_cannot_set_server_owned_fields(api, user, field, value):
    sub = subscribe(user, "https://example.com/mine")
    before = snapshot()

    response = api.patch(
        f"/v1/subscriptions/{sub.guid}", {"is_subscribed": False, field: value}, format="json"
    )

    body = assert_error(response, 405)
    assert field in body["errors"]
    assert snapshot() == before


def test_api3_an_add_entry_cannot_set_server_owned_fields(api, user, other_user):
    entry = {"feed_url": "https://example.com/mine", **SERVER_FIELDS, "guid": None}
    entry.update(user=other_user.pk, user_id=other_user.pk)

    response = api.post("/v1/subscriptions", {"subscriptions": [entry]}, format="json")

    assert response.status_code == 200
    sub = Subscription.objects.get()
    assert sub.user_id == user.pk
    assert sub.deleted is None
    assert sub.is_subscribed is True
    assert sub.subscription_changed.year > 2000
    assert not Deletion.objects.exists()


# --- API8: security misconfiguration -------------------------------------------------------------


def test_api8_no_browsable_api_only_json(api, user):
    subscribe(user, "https://example.com/mine")

    response = api.get("/v1/subscriptions", HTTP_ACCEPT="text/html")

    assert settings.REST_FRAMEWORK["DEFAULT_RENDERER_CLASSES"] == ["api.renderers.JSONRenderer"]
    assert response["Content-Type"].startswith("application/json")
    assert b"<html" not in response.content.lower()


def production_setting(name: str, **env: str) -> str:
    """A setting as the production settings module reads it from this environment."""
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import django; django.setup(); from django.conf import settings; "
            f"print(settings.{name})",
        ],
        cwd=ROOT,
        env={"PATH": os.environ["PATH"], "DJANGO_SETTINGS_MODULE": "config.settings.base", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_api8_debug_is_off_unless_asked_for():
    secret = "a-production-secret-key-that-is-long-and-random-enough-0123456789"

    assert production_setting("DEBUG", SECRET_KEY=secret) == "False"
    assert production_setting("DEBUG", SECRET_KEY=secret, DEBUG="true") == "True"


def test_api8_make_dev_is_the_one_place_debug_is_switched_on():
    """`make run`, the home server, runs without DEBUG; only the development server has it."""
    makefile = (ROOT / "Makefile").read_text()

    assert makefile.count("DEBUG ?=") == 1
    assert "dev: export DEBUG ?= true" in makefile
    run = makefile[makefile.index("\nrun:") :].split("\n\n")[0]
    assert "manage.py serve" in run
    assert "DEBUG" not in run


def test_api8_errors_never_carry_a_traceback_or_the_debug_page(anon):
    response = anon.get("/v1/" + "x" * 300)

    assert_error(response, 404)
    assert b"Traceback" not in response.content
    assert b"DEBUG" not in response.content
