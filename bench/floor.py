"""The floor: the least Python does to answer GET /v1/subscriptions/{guid} as the service does.

A bare WSGI app: it checks the bearer token's signature and expiry, runs the service's query on
one psycopg connection per thread, and answers the same JSON. Served by gunicorn with the
service's own settings (`config/gunicorn.py`), its requests per second are what Python on this
machine can do; `make bench` reports the service as a fraction of it.
"""

import json
import os
import threading
import uuid
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import jwt
import psycopg

# The query the service runs for GET one (subscriptions.selectors.subscription_shown).
QUERY = """
    SELECT s.feed_url, CAST(s.guid AS text), s.is_subscribed, s.subscription_changed,
        s.guid_changed, s.deleted, CAST(g.guid AS text)
    FROM subscriptions_subscription s
    JOIN subscriptions_subscriptionguid g ON g.subscription_id = s.id
    WHERE g.user_id = %s AND g.guid = %s
"""
PREFIX = "/v1/subscriptions/"
SECRET = os.environ["SECRET_KEY"]
_local = threading.local()


def connection() -> psycopg.Connection[Any]:
    conn = getattr(_local, "conn", None)
    if conn is None:
        url = urlsplit(os.environ["DATABASE_URL"])
        conn = _local.conn = psycopg.connect(
            host=url.hostname,
            port=url.port,
            user=url.username,
            dbname=url.path.lstrip("/"),
            autocommit=True,
            options="-c TimeZone=UTC",  # timestamps in UTC, as the service answers them
        )
    return conn


def stamp(value: datetime | None) -> str | None:
    return None if value is None else value.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def error(start_response: Any, status: str, message: str) -> list[bytes]:
    return answer(start_response, status, {"code": status[:3], "message": message})


def answer(start_response: Any, status: str, body: dict[str, Any]) -> list[bytes]:
    data = json.dumps(body).encode()
    headers = [("Content-Type", "application/json"), ("Content-Length", str(len(data)))]
    start_response(status, headers)
    return [data]


def application(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    path = environ["PATH_INFO"]
    scheme, _, token = environ.get("HTTP_AUTHORIZATION", "").partition(" ")
    try:
        claims = jwt.decode(token, SECRET, algorithms=["HS256"]) if scheme == "Bearer" else None
    except jwt.InvalidTokenError:
        claims = None
    if claims is None:
        return error(start_response, "401 Unauthorized", "User not authorized")
    try:
        asked = uuid.UUID(path.removeprefix(PREFIX))
    except ValueError:
        return error(start_response, "405 Method Not Allowed", "Input could not be validated")
    row = connection().execute(QUERY, (int(claims["user_id"]), asked)).fetchone()
    if row is None:
        return error(start_response, "404 Not Found", "Resource not found")
    feed_url, guid, is_subscribed, changed, guid_changed, deleted, shown = row
    body = {"feed_url": feed_url, "guid": shown, "is_subscribed": is_subscribed}
    body["subscription_changed"] = stamp(changed)
    if guid != shown:
        body["new_guid"] = guid
    for name, value in (("guid_changed", guid_changed), ("deleted", deleted)):
        if value is not None:
            body[name] = stamp(value)
    return answer(start_response, "200 OK", body)
