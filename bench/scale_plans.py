"""`make scale`'s plans (bench/scale.py): every hot request, the admin's pages and the sweeps
run in-process on the large database, and the plan of each statement they sent; no sequential
scan of a loaded table is the target."""

import re
import time
from base64 import b64encode
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

from bench import scale_data as data
from bench.harness import OUT, signed_in_cookie, token_for
from bench.scale_databases import BIG, dsn, on_database
from tests import servers

PLANS = OUT / "scale-plans.txt"
# The admin's pages end at the 10,000th row (core.admin.EstimatedCountPaginator.COUNT_CAP): an
# OFFSET past that walks every row before it.
OFFSET_CAP = 10_000


SCAN_NODES = ("Seq Scan", "Index Scan", "Index Only Scan", "Bitmap Heap Scan")
# Nodes that read all of their input before they give a row: a LIMIT above them stops nothing.
BLOCKING = ("Sort", "Incremental Sort", "Hash", "Aggregate", "Materialize", "SetOp")


def scans(plan: dict[str, Any], limited: bool = False) -> Iterator[tuple[str, str, str, bool]]:
    """(node type, relation, index, reads the whole table) of every scan in a JSON plan.

    A scan reads the whole table when it is sequential, or an index scan with no condition
    (the whole index in its order) unless a LIMIT above it stops it after a few rows, with no
    filter to skip rows on the way: a list's newest 100 by the primary key."""
    kind = plan.get("Node Type", "")
    if kind == "Limit":
        limited = True
    elif kind in BLOCKING:
        limited = False
    if kind in SCAN_NODES:
        index = plan.get("Index Name", "")
        if kind == "Bitmap Heap Scan":
            index = ", ".join(
                p.get("Index Name", "") for p in plan.get("Plans", []) if "Index Name" in p
            )
        unbounded = not limited or "Filter" in plan
        whole = kind == "Seq Scan" or (
            kind != "Bitmap Heap Scan" and "Index Cond" not in plan and unbounded
        )
        yield kind, plan.get("Relation Name", ""), index, whole
    for child in plan.get("Plans", []):
        yield from scans(child, limited)


def explained(
    conn: Any, statements: list[str], out: Any, label: str
) -> tuple[list[str], list[str]]:
    """EXPLAIN each statement (without running it); return the scans of loaded tables as text,
    and those that read a whole loaded table."""
    big = {table for table, _, _ in data.TABLES}
    # A partial index holds only its rows (the pending deletions, say): reading all of it is
    # reading those.
    partial = {
        name for (name,) in conn.execute(
            "SELECT indexrelid::regclass::text FROM pg_index WHERE indpred IS NOT NULL"
        )
    }  # fmt: skip
    seen: list[str] = []
    bad: list[str] = []
    for sql in statements:
        if not re.match(r"\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b", sql, re.I):
            continue
        offset = re.search(r"\bOFFSET (\d+)", sql)
        if offset and int(offset[1]) > OFFSET_CAP:
            bad.append(f"{label}: OFFSET {offset[1]} walks past every row before it")
        plan = conn.execute("EXPLAIN (FORMAT JSON) " + sql).fetchone()[0][0]["Plan"]
        text = "\n".join(r[0] for r in conn.execute("EXPLAIN " + sql).fetchall())
        out.write(f"--- {label}\n{sql}\n{text}\n\n")
        for node, relation, index, whole in scans(plan):
            if relation not in big:
                continue
            short = f"{node} {index or ''} on {relation}".replace("  ", " ")
            if short not in seen:
                seen.append(short)
            if whole and index not in partial:
                bad.append(f"{label}: {short} reads the whole table")
    return seen, bad


def plans(pg: servers.Server) -> list[str]:
    """Run every hot request, the admin's list pages and the sweeps in-process on the large
    database for its middle account; print their scans; return the sequential scans of loaded
    tables."""
    import psycopg
    from django.conf import settings
    from django.contrib import admin
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client as DjangoClient
    from django.urls import reverse

    from accounts.services import refresh_token_for
    from deletions.services import (
        account_deletion_process,
        account_deletion_request,
        deletion_sweep,
    )

    number = BIG.accounts // 2
    name = data.username(number)
    print(f"\nplans on the large database, for account {number:,} (the middle one)")
    bad: list[str] = []
    with (
        on_database("opa_scale"),
        PLANS.open("w") as out,
        psycopg.connect(dsn(pg, "opa_scale"), autocommit=True) as explain,
    ):
        user = get_user_model().objects.get(pk=number)
        token = token_for(user)
        refresh = str(refresh_token_for(user))
        cookie = signed_in_cookie(user).split("=", 1)[1]
        staff, _ = get_user_model().objects.get_or_create(
            username="scale-admin", defaults={"is_staff": True, "is_superuser": True}
        )
        basic = "Basic " + b64encode(f"{name}:{data.PASSWORD}".encode()).decode()
        api = DjangoClient(HTTP_AUTHORIZATION=f"Bearer {token}")
        app = DjangoClient(HTTP_AUTHORIZATION=basic)
        app.get(f"/api/2/subscriptions/{name}/phone.json?since=0")  # the session cookie
        browser = DjangoClient()
        browser.cookies[settings.SESSION_COOKIE_NAME] = cookie
        staff_browser = DjangoClient()
        staff_browser.force_login(staff)
        # A subscription of this run's own, to GET, PATCH and DELETE (with SCALE_KEEP, the
        # account's own were changed by earlier runs).
        added = api.post("/v1/subscriptions",
                         {"subscriptions": [{"feed_url": f"https://plan.example.net/{time.time_ns()}"}]},
                         content_type="application/json").json()  # fmt: skip
        guid = added["success"][0]["guid"]
        podcast = data.subscription_guid(number, 4)
        feed = BIG.feed_of(number, 4)
        pulled = int((data.T0 + timedelta(seconds=data.joined(number) + 3600)).timestamp())
        episodes_since = int(
            (data.T0 + timedelta(seconds=data.action_received(number, 14))).timestamp()
        )
        since = (data.T0 + timedelta(seconds=data.joined(number) + 3600)).isoformat()
        requests: list[tuple[str, Callable[[], Any]]] = [
            ("GET one", lambda: api.get(f"/v1/subscriptions/{guid}")),
            ("list since", lambda: api.get(
                "/v1/subscriptions", {"since": since, "per_page": "50"})),
            ("add", lambda: api.post(
                "/v1/subscriptions", {"subscriptions": [{"feed_url": f"https://plan.example.net/a{time.time_ns()}"}]},
                content_type="application/json")),
            ("PATCH", lambda: api.patch(
                f"/v1/subscriptions/{guid}", {"is_subscribed": False},
                content_type="application/json")),
            ("DELETE", lambda: api.delete(f"/v1/subscriptions/{guid}")),
            ("gpodder pull", lambda: app.get(
                f"/api/2/subscriptions/{name}/phone.json", {"since": pulled})),
            ("gpodder upload", lambda: app.post(
                f"/api/2/subscriptions/{name}/phone.json",
                {"add": ["https://plan.example.net/b"], "remove": []},
                content_type="application/json")),
            ("episode upload", lambda: app.post(
                f"/api/2/episodes/{name}.json",
                [{"podcast": data.feed_url(feed), "episode": data.episode_url(feed, 2),
                  "action": "download", "device": "phone"}],
                content_type="application/json")),
            ("episode download since", lambda: app.get(
                f"/api/2/episodes/{name}.json", {"since": episodes_since})),
            ("Nextcloud subscriptions", lambda: app.get(
                "/index.php/apps/gpoddersync/subscriptions", {"since": pulled})),
            ("Nextcloud episode actions", lambda: app.get(
                "/index.php/apps/gpoddersync/episode_action", {"since": episodes_since})),
            ("podcasts page", lambda: browser.get("/podcasts/")),
            ("podcast page", lambda: browser.get(f"/podcasts/{podcast}/")),
            ("history page", lambda: browser.get("/history/")),
            ("devices page", lambda: browser.get("/devices/")),
        ]  # fmt: skip

        def staff_get(url: str, query: dict[str, Any] | None = None) -> Callable[[], Any]:
            return lambda: staff_browser.get(url, query or {})

        for model in admin.site._registry:
            url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
            requests.append((f"admin list {model._meta.label}", staff_get(url)))
            requests.append((f"admin search {model._meta.label}, a username",
                             staff_get(url, {"q": name})))  # fmt: skip
        requests += [
            ("admin search auth.User, an email", lambda: staff_browser.get(
                reverse("admin:auth_user_changelist"), {"q": f"{name}@EXAMPLE.net"})),
            ("admin search subscriptions, a feed URL", lambda: staff_browser.get(
                reverse("admin:subscriptions_subscription_changelist"),
                {"q": data.feed_url(feed).upper().replace("HTTPS://", "https://")})),
            ("admin search feed checks, a feed URL", lambda: staff_browser.get(
                reverse("admin:feedchecks_feedcheck_changelist"), {"q": data.feed_url(feed)})),
            ("admin search feed episodes, a feed URL", lambda: staff_browser.get(
                reverse("admin:feedchecks_feedepisode_changelist"), {"q": data.feed_url(feed)})),
            ("admin filter deletions, pending", lambda: staff_browser.get(
                reverse("admin:deletions_deletion_changelist"), {"status__exact": "PENDING"})),
            ("admin list subscriptions, of a user", lambda: staff_browser.get(
                reverse("admin:subscriptions_subscription_changelist"),
                {"user__id__exact": number})),
            ("admin list subscriptions, its last page", lambda: staff_browser.get(
                reverse("admin:subscriptions_subscription_changelist"), {"p": 100})),
            ("admin overview", staff_get(reverse("admin-overview"))),
            ("admin user page, its links' counts", staff_get(
                reverse("admin:auth_user_change", args=[number]))),
            ("/v1/ login", lambda: DjangoClient().post(
                "/v1/auth/login", {"username": name, "password": data.PASSWORD},
                content_type="application/json")),
            ("/v1/ token refresh", lambda: DjangoClient().post(
                "/v1/auth/refresh", {"refresh_token": refresh}, content_type="application/json")),
            ("the JSON export", lambda: b"".join(browser.get("/data/everything.json"))),
            ("an account's deletion, in the worker", lambda: account_deletion_process(
                deletion_id=account_deletion_request(user=get_user_model().objects.filter(
                    pk__lt=BIG.accounts).order_by("-pk").first()).pk)),
            ("sweep: deletions", lambda: deletion_sweep()),
            ("sweep: clearsessions", lambda: call_command("clearsessions")),
        ]  # fmt: skip
        sent: list[str] = []

        def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
            """Keep each statement as PostgreSQL can plan it alone: its parameters in place."""
            one = params[0] if many and params else params
            sent.append(psycopg.ClientCursor(explain).mogrify(sql, one) if one else sql)
            return execute(sql, params, many, context)

        for label, request in requests:
            sent.clear()
            with connection.execute_wrapper(record):
                answer = request()
            status = getattr(answer, "status_code", None)
            if status is not None and (status >= 400 or answer.get("Location", "").endswith("e=1")):
                raise RuntimeError(f"{label} answered {status}: {answer.content[:300]!r}")
            seen, wrong = explained(explain, sent, out, label)
            bad += wrong
            print(f"  {label:<40} {len(sent):>2} statements: " + "; ".join(seen or ["-"]))
    print(f"  the plans: {PLANS}")
    return bad
