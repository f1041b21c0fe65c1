"""Capabilities, the API index, health and the OpenAPI document (docs/api.md, "Versioning";
docs/operations.md)."""

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from django.db import connections
from django.db.utils import OperationalError

from core import version
from tests import servers
from tests.helpers import health_answer

CORE = {"1.0.0": {"status": "STABLE", "root": "/v1"}}
PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


# --- Capabilities -----------------------------------------------------------------------------


def test_capabilities_need_no_token(anon, db):
    response = anon.get("/v1/capabilities")

    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["urn:opa:core"] == CORE
    extras = set(body) - {"urn:opa:core", "urn:opa-subscriptions:server"}
    assert all(key.startswith("urn:opa:extra:") for key in extras)


def test_capabilities_name_the_server_and_its_version(anon, db):
    """The version a self-hoster sees is pyproject.toml's (docs/api.md, "GET /v1/capabilities")."""
    with open(PYPROJECT, "rb") as file:
        project = tomllib.load(file)["project"]

    server = anon.get("/v1/capabilities").json()[f"urn:{project['name']}:server"]

    assert server == {project["version"]: {"status": "STABLE", "root": "/"}}


def test_capabilities_answer_what_their_document_declares(anon, openapi):
    schema = openapi["paths"]["/v1/capabilities"]["get"]["responses"]["200"]["content"][
        "application/json"
    ]["schema"]
    body = anon.get("/v1/capabilities").json()

    assert set(schema["required"]) <= set(body)
    for urn, versions in body.items():
        assert urn.startswith("urn:"), urn
        assert all(set(v) == {"status", "root"} for v in versions.values()), urn


def test_capabilities_advertise_opml_where_it_is_served(api, anon):
    body = anon.get("/v1/capabilities").json()

    opml = body["urn:opa:extra:opml"]["1.0.0"]
    assert opml["status"] == "STABLE"
    assert api.get(f"{opml['root']}/subscriptions.opml").status_code == 200


def test_capabilities_with_a_token_are_the_same(api, anon):
    assert api.get("/v1/capabilities").json() == anon.get("/v1/capabilities").json()


def test_capabilities_root_serves_the_api(anon, db):
    root = anon.get("/v1/capabilities").json()["urn:opa:core"]["1.0.0"]["root"]

    response = anon.get(f"{root}/subscriptions/9b024349-ccf0-5f69-a609-6b82873eab3c")

    # The API is there and asks for a token: not an unknown path.
    assert response.status_code == 401


# --- Index ------------------------------------------------------------------------------------


def test_index_links_to_the_api(anon, db):
    response = anon.get("/v1/")

    assert response.status_code == 200, response.content
    links = response.json()
    assert links
    for name, url in links.items():
        parts = urlsplit(url)
        assert parts.scheme in ("http", "https"), name
        assert parts.path.startswith("/v1/"), name
        followed = anon.get(parts.path)
        assert followed.status_code not in (404, 500), (name, followed.status_code)


def test_index_names_capabilities_and_documents(anon, db):
    paths = {urlsplit(url).path for url in anon.get("/v1/").json().values()}

    assert {"/v1/capabilities", "/v1/openapi.json", "/v1/docs/"} <= paths


# --- Health -----------------------------------------------------------------------------------


def test_health_without_redis(anon, db, settings):
    settings.REDIS_URL = ""

    response = anon.get("/health")

    assert response.status_code == 200, response.content
    assert health_answer(response) == {
        "status": "ok",
        "database": "ok",
        "broker": "in-process",
        "version": version.VERSION,
    }


def test_health_with_redis_on_a_closed_port(anon, db, settings):
    settings.REDIS_URL = f"redis://127.0.0.1:{servers.free_port()}/0"

    response = anon.get("/health")

    assert response.status_code == 503, response.content
    body = response.json()
    assert body["status"] != "ok"
    assert body["broker"] not in ("ok", "in-process")


def test_health_when_the_database_does_not_answer(anon, db, settings, monkeypatch):
    settings.REDIS_URL = ""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise OperationalError("connection refused")

    with monkeypatch.context() as patch:
        patch.setattr(type(connections["default"]), "cursor", refuse)
        response = anon.get("/health")

    assert response.status_code == 503, response.content
    body = response.json()
    assert body["status"] != "ok"
    assert body["database"] != "ok"


def test_health_needs_no_token(anon, api, db, settings):
    settings.REDIS_URL = ""

    assert anon.get("/health").status_code == 200
    assert api.get("/health").status_code == 200


# --- OpenAPI ----------------------------------------------------------------------------------


@pytest.fixture
def openapi(anon: Any, db: None) -> dict[str, Any]:
    response = anon.get("/v1/openapi.json")
    assert response.status_code == 200, response.content[:500]
    return json.loads(response.content)


def resolve(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].removeprefix("#/components/schemas/")
        schema = doc["components"]["schemas"][name]
    return schema


def operations(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method, path, operation)
        for path, item in doc["paths"].items()
        for method, operation in item.items()
        if method in ("get", "put", "post", "patch", "delete")
    ]


# Statuses each operation really answers (docs/api.md: "Errors", "Limits").
DOCUMENTED = {
    ("post", "/v1/subscriptions"): {200, 401, 405, 409, 413, 415, 429},
    ("get", "/v1/subscriptions"): {200, 401, 405, 429},
    ("get", "/v1/subscriptions/{guid}"): {200, 401, 404, 405, 410, 429},
    ("patch", "/v1/subscriptions/{guid}"): {200, 401, 404, 405, 409, 410, 413, 415, 429},
    ("delete", "/v1/subscriptions/{guid}"): {202, 401, 404, 405, 409, 410, 413, 429},
    ("get", "/v1/deletions/{id}"): {200, 401, 404, 405, 429},
    ("post", "/v1/auth/login"): {200, 401, 405, 409, 413, 415, 429},
    ("post", "/v1/auth/refresh"): {200, 401, 405, 409, 413, 415, 429},
    ("post", "/v1/auth/logout"): {204, 401, 405, 409, 413, 415, 429},
    ("get", "/v1/subscriptions.opml"): {200, 401, 405, 429},
    ("post", "/v1/subscriptions.opml"): {200, 401, 405, 409, 413, 415, 429},
}


def test_openapi_document_is_openapi_3(openapi):
    assert openapi["openapi"].startswith("3.")
    assert openapi["info"]["title"]
    assert openapi["info"]["version"]


@pytest.mark.parametrize(("method", "path"), DOCUMENTED, ids=[f"{m} {p}" for m, p in DOCUMENTED])
def test_each_operation_documents_every_status_it_answers(openapi, method, path):
    responses = openapi["paths"][path][method]["responses"]

    assert DOCUMENTED[(method, path)] <= {int(status) for status in responses}


def test_every_error_response_is_the_error_object(openapi):
    checked = 0
    for method, path, operation in operations(openapi):
        for status, response in operation["responses"].items():
            if int(status) < 400:
                continue
            schema = resolve(openapi, response["content"]["application/json"]["schema"])
            assert schema["type"] == "object", (method, path, status)
            assert {"code", "message"} <= set(schema["required"]), (method, path, status)
            assert schema["properties"]["code"]["type"] == "string", (method, path, status)
            assert schema["properties"]["message"]["type"] == "string", (method, path, status)
            checked += 1
    assert checked >= 30


def test_the_list_documents_its_parameters_page_body_and_an_example(openapi):
    operation = openapi["paths"]["/v1/subscriptions"]["get"]
    parameters = {p["name"]: p for p in operation["parameters"]}
    content = operation["responses"]["200"]["content"]["application/json"]
    body = resolve(openapi, content["schema"])

    assert set(parameters) == {"since", "page", "per_page"}
    assert parameters["since"]["schema"] == {"type": "string", "format": "date-time"}
    assert parameters["per_page"]["schema"]["maximum"] == 500
    assert set(body["required"]) == {"total", "page", "per_page", "subscriptions"}
    assert set(body["properties"]) == {
        "total",
        "page",
        "per_page",
        "next",
        "previous",
        "subscriptions",
    }
    [example] = content["examples"].values()
    assert set(example["value"]) == set(body["properties"])
    assert example["value"]["subscriptions"][0]["new_guid"]


def test_the_document_says_what_request_bodies_refuse(openapi):
    """Without it, schema-valid requests the server refuses (405) would be promised."""
    schemas = openapi["components"]["schemas"]
    patch = openapi["paths"]["/v1/subscriptions/{guid}"]["patch"]["requestBody"]

    assert schemas["AddRequestRequest"]["properties"]["subscriptions"]["maxItems"] == 500
    assert patch["required"] is True
    body = resolve(openapi, patch["content"]["application/json"]["schema"])
    assert body["additionalProperties"] is False
    assert body["minProperties"] == 1


# Successes that are not JSON by design (docs/api.md, "OPML import and export").
NOT_JSON = {("get", "/v1/subscriptions.opml"): "text/x-opml"}


def test_every_json_success_documents_its_body(openapi):
    for method, path, operation in operations(openapi):
        for status, response in operation["responses"].items():
            if int(status) in (200, 201, 202):
                media_type = NOT_JSON.get((method, path), "application/json")
                assert media_type in response.get("content", {}), (method, path, status)


def test_every_operation_is_throttled_and_documents_429(openapi):
    """Every /v1/ view, capabilities included, is under a throttle (docs/api.md, "Limits")."""
    for method, path, operation in operations(openapi):
        assert "429" in operation["responses"], (method, path)


def bearer_schemes(doc: dict[str, Any]) -> set[str]:
    return {
        name
        for name, scheme in doc["components"]["securitySchemes"].items()
        if scheme["type"] == "http" and scheme["scheme"].lower() == "bearer"
    }


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("post", "/v1/subscriptions"),
        ("get", "/v1/subscriptions"),
        ("get", "/v1/subscriptions/{guid}"),
        ("patch", "/v1/subscriptions/{guid}"),
        ("get", "/v1/deletions/{id}"),
    ],
)
def test_operations_of_the_interface_require_a_bearer_token(openapi, method, path):
    requirements = openapi["paths"][path][method]["security"]

    assert requirements
    assert all(set(requirement) & bearer_schemes(openapi) for requirement in requirements)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/v1/capabilities"),
        ("post", "/v1/auth/login"),
        ("post", "/v1/auth/refresh"),
        ("post", "/v1/auth/logout"),
    ],
)
def test_public_operations_need_no_token(openapi, method, path):
    requirements = openapi["paths"][path][method].get("security", [])

    # No requirement at all, or an empty one among the alternatives, means no token is needed.
    assert not requirements or {} in requirements


def test_deletion_id_is_documented_as_an_integer(openapi):
    [parameter] = [
        p for p in openapi["paths"]["/v1/deletions/{id}"]["get"]["parameters"] if p["in"] == "path"
    ]

    assert parameter["name"] == "id"
    assert parameter["required"] is True
    assert parameter["schema"]["type"] == "integer"


def test_openapi_yaml_is_the_same_document(anon, openapi):
    response = anon.get("/v1/openapi.yaml")

    assert response.status_code == 200, response.content[:500]
    assert yaml.safe_load(response.content) == openapi


def test_openapi_needs_no_token(anon, db):
    assert anon.get("/v1/openapi.json").status_code == 200
    assert anon.get("/v1/openapi.yaml").status_code == 200


def test_docs_page_is_html_reading_the_document(anon, db):
    response = anon.get("/v1/docs/")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    page = response.content.decode()
    assert "<html" in page.lower()
    assert "/v1/openapi.json" in page or "/v1/openapi.yaml" in page


def test_check_deploy_passes_with_production_settings(tmp_path):
    """docs/operations.md: `manage.py check --deploy` passes with production settings."""
    env = {
        "PATH": os.environ["PATH"],
        "DJANGO_SETTINGS_MODULE": "config.settings.base",
        "SECRET_KEY": "a-production-secret-key-that-is-long-and-random-enough-0123456789",
        "ALLOWED_HOSTS": "api.example.com",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "REDIS_URL": "redis://127.0.0.1:6379/0",
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=Path(__file__).resolve().parents[2],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_settings_refuse_to_start_without_a_secret_key(tmp_path):
    """The full layout (a DATABASE_URL of its own) needs one key on every host: it is never made
    up. The home server keeps its own (tests/home)."""
    env = {
        "PATH": os.environ["PATH"],
        "DJANGO_SETTINGS_MODULE": "config.settings.base",
        "DATABASE_URL": "postgres://opa@127.0.0.1:1/opa",
        "DATA_DIR": str(tmp_path),
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=Path(__file__).resolve().parents[2],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr
    assert not list(tmp_path.iterdir())


def test_health_is_not_redirected_to_https(anon, db, settings):
    """Load balancers probe over plain HTTP, even where everything else is redirected."""
    settings.SECURE_SSL_REDIRECT = True

    assert anon.get("/health").status_code == 200
    assert anon.get("/v1/capabilities").status_code == 301


def test_celery_settings_make_a_lost_task_impossible():
    """docs/api.md, "Deletion": late ack, reject on worker loss, prefetch 1, limits."""
    from config.celery import app
    from deletions.tasks import process_deletion
    from feedchecks.tasks import check_feed, check_feeds
    from imports.tasks import run_import

    conf = app.conf
    assert conf.task_acks_late is True
    assert conf.task_reject_on_worker_lost is True
    assert conf.worker_prefetch_multiplier == 1
    assert 0 < conf.task_soft_time_limit < conf.task_time_limit
    assert conf.broker_transport_options["visibility_timeout"] > conf.task_time_limit
    assert conf.broker_transport_options["unacked_restore_throttle"] == 1
    assert {queue.name for queue in conf.task_queues} == {"celery", "deletions", "feeds", "imports"}
    assert getattr(process_deletion, "queue", None) == "deletions"
    assert getattr(check_feed, "queue", None) == "feeds"
    assert getattr(check_feeds, "queue", None) == "feeds"
    assert getattr(run_import, "queue", None) == "imports"
    for task in (process_deletion, check_feed, check_feeds):
        assert (task.acks_late, task.reject_on_worker_lost) == (True, True), task.name
    assert "sweep-deletions" in conf.beat_schedule


def test_the_cache_uses_another_redis_database_than_the_broker():
    from config.settings.base import _next_redis_database

    assert _next_redis_database("redis://redis:6379/0") == "redis://redis:6379/1"
    assert _next_redis_database("redis://:secret@redis:6379") == "redis://:secret@redis:6379/1"
