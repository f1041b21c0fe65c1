"""The admin's overview (docs/operations.md, "The admin"): staff only, each list's rows for the
staff its admin would open it for and the counts for the rest, its figures on a seeded
database, each read in a bounded number of queries, and the queues of a real Redis broker."""

import functools
import hashlib
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
import redis
from celery import current_app
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import Client
from kombu.transport.redis import Channel

from accounts import activity
from accounts.services import user_login_stamp
from core.admin import EstimatedCountPaginator
from deletions.models import AccountDeletion, Deletion
from episodes.models import EpisodeAction
from feedchecks.models import FeedCheck
from feedchecks.services import feed_check_run
from gpodder.models import Device
from staff import selectors
from subscriptions.models import Subscription
from tests import servers
from tests.factories import UserFactory
from tests.helpers import Clock, nodes, statements_of, subscribe

pytestmark = pytest.mark.e2e

OVERVIEW = "/admin/overview/"
# The tables that grow with the accounts, which the overview reads.
# A superuser's: every list behind the overview.
EVERY_LIST = selectors.Viewer(
    accounts=True, deletions=True, account_deletions=True, feed_checks=True
)
BIG = {
    "auth_user",
    "gpodder_device",
    "subscriptions_subscription",
    "episodes_episodeaction",
    "deletions_deletion",
    "deletions_accountdeletion",
    "feedchecks_feedcheck",
}


def page(client: Client) -> str:
    response = client.get(OVERVIEW)
    assert response.status_code == 200, response.content[:500]
    return response.content.decode()


# --- Who sees it ------------------------------------------------------------------------------


def test_the_admin_index_links_to_the_overview(admin_client):
    index = admin_client.get("/admin/").content.decode()
    assert f'href="{OVERVIEW}"' in index


def test_signed_out_people_are_sent_to_the_admin_sign_in(db):
    response = Client().get(OVERVIEW)
    assert response.status_code == 302
    assert response["Location"] == f"/admin/login/?next={OVERVIEW}"


def test_an_account_that_is_not_staff_is_sent_to_the_admin_sign_in(db):
    alice: Any = UserFactory(username="alice")
    client = Client()
    client.force_login(alice)
    response = client.get(OVERVIEW)
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")
    assert "Accounts" not in response.content.decode()


def test_staff_without_superuser_see_it(db):
    helper: Any = UserFactory(username="helper", is_staff=True)
    client = Client()
    client.force_login(helper)
    assert "Syncs per day" in page(client)


# --- What each staff account sees -------------------------------------------------------------

# A private feed's URL carries its subscriber's token; a failed deletion names its account.
PRIVATE_FEED = "https://private.example/feeds/42.xml?token=f21-s3cret-t0ken"
TOKEN = "f21-s3cret-t0ken"
# The lists behind the overview's details, by the view permission that opens each.
LIST_OF = {
    "auth.view_user": "/admin/auth/user/",
    "deletions.view_deletion": "/admin/deletions/deletion/",
    "deletions.view_accountdeletion": "/admin/deletions/accountdeletion/",
    "feedchecks.view_feedcheck": "/admin/feedchecks/feedcheck/",
}


@pytest.fixture
def private(db: None, clock: Clock) -> None:
    """A failing private feed, a failed deletion of quinn's subscription and a failed deletion
    of rosa's account."""
    FeedCheck.objects.create(
        key_digest="a" * 64,
        url=PRIVATE_FEED,
        checked=clock.now,
        result=FeedCheck.Result.ERROR,
        error="Not found (HTTP 404)",
    )
    quinn: Any = UserFactory(username="quinn-f21")
    Deletion.objects.create(
        user=quinn, guid=uuid.uuid4(), status="FAILURE", requested=clock.now, finished=clock.now
    )
    AccountDeletion.objects.create(
        username="rosa-f21", status="FAILURE", requested=clock.now, finished=clock.now
    )


def staff_with(*permissions: str) -> Client:
    """A client signed in as a staff account (not a superuser) with these permissions."""
    helper: Any = UserFactory(is_staff=True)
    for name in permissions:
        app_label, codename = name.split(".")
        helper.user_permissions.add(
            Permission.objects.get(content_type__app_label=app_label, codename=codename)
        )
    client = Client()
    client.force_login(helper)
    return client


def linked(body: str) -> set[str]:
    """The permissions of the lists (LIST_OF) the page links to, or to one of whose rows."""
    links = re.findall(r'href="([^"]*)"', body)
    return {name for name, path in LIST_OF.items() if any(x.startswith(path) for x in links)}


def links_open(client: Client, body: str) -> None:
    """Every link of the overview's own (its content's) opens for `client`: none is a 403."""
    content = body[body.index('id="content-main"') :]
    for url in set(re.findall(r'href="(/admin/[^"]*)"', content)):
        assert client.get(url.replace("&amp;", "&")).status_code == 200, url


def test_staff_without_permissions_see_the_counts_and_no_url_nor_username(private):
    body = page(staff_with())

    for secret in (PRIVATE_FEED, TOKEN, "private.example", "quinn-f21", "rosa-f21"):
        assert secret not in body
    assert "1 feed failed its last check." in body
    assert "Not found (HTTP 404)" not in body  # a feed's error goes with its URL
    deletions = body[body.index('id="deletions-heading"') : body.index('id="feeds-heading"')]
    counts = re.findall(r'<td class="n">(?:<a [^>]*>)?(\d+)(?:</a>)?</td>', deletions)
    assert counts == ["0", "1", "0", "1"]  # pending and failed, of subscriptions and accounts
    # No link to a list (or a row of one) that answers them 403.
    assert not linked(body)


def test_staff_with_the_view_permissions_see_what_their_lists_show(private):
    client = staff_with(*LIST_OF)
    body = page(client)

    assert f'title="{PRIVATE_FEED}"' in body
    assert "Not found (HTTP 404)" in body
    assert "A subscription of quinn-f21" in body
    assert "The account rosa-f21" in body
    assert linked(body) == {*LIST_OF}
    links_open(client, body)


@pytest.mark.parametrize(
    ("permissions", "seen", "unseen"),
    [
        pytest.param(
            ["feedchecks.view_feedcheck"], [TOKEN], ["quinn-f21", "rosa-f21"], id="feeds-only"
        ),
        # The accounts' list, but not the deletions': no deletion to name an account of.
        pytest.param(["auth.view_user"], [], [TOKEN, "quinn-f21", "rosa-f21"], id="users-only"),
        # The deletions, without the accounts: each said, its account not named.
        pytest.param(
            ["deletions.view_deletion", "deletions.view_accountdeletion"],
            ["A subscription</a>", "An account</a>"],
            [TOKEN, "quinn-f21", "rosa-f21"],
            id="deletions-only",
        ),
        pytest.param(
            ["auth.view_user", "deletions.view_deletion"],
            ["A subscription of quinn-f21"],
            [TOKEN, "rosa-f21"],
            id="users-and-subscription-deletions",
        ),
    ],
)
def test_staff_with_some_permissions_see_those_lists_alone(private, permissions, seen, unseen):
    client = staff_with(*permissions)
    body = page(client)

    for text in seen:
        assert text in body
    for text in unseen:
        assert text not in body
    assert linked(body) == {*permissions}
    links_open(client, body)


def test_a_superuser_sees_everything(private, admin_client):
    body = page(admin_client)

    assert TOKEN in body
    assert "A subscription of quinn-f21" in body
    assert "The account rosa-f21" in body
    assert linked(body) == {*LIST_OF}
    links_open(admin_client, body)


# --- The figures ------------------------------------------------------------------------------


def action(user: Any, received: Any, n: int) -> EpisodeAction:
    """One of an upload's actions: the upload's second is `received`."""
    return EpisodeAction.objects.create(
        user=user,
        podcast="https://feeds.example/show.xml",
        podcast_key=hashlib.sha256(b"feeds.example/show.xml").hexdigest(),
        episode=f"https://media.example/{n}.mp3",
        action="download",
        timestamp=received,
        received=received,
        identity=hashlib.sha256(f"{user.pk} {n}".encode()).hexdigest(),
    )


def changed(sub: Subscription, when: Any) -> None:
    Subscription.objects.filter(pk=sub.pk).update(subscription_changed=when)


@pytest.fixture
def seeded(db: None, clock: Clock, settings: Any) -> dict[str, Any]:
    """Seven accounts (staff's sign-in is one) active at different times, a fortnight of
    uploads and subscription changes, deletions of every status, and failing feeds."""
    settings.FEED_CHECKS_ENABLED = True
    now = clock.now
    staff: Any = UserFactory(username="staff", is_staff=True, is_superuser=True)
    user_login_stamp(user=staff)  # staff: signed in now
    alice: Any = UserFactory(username="alice", last_login=now - timedelta(days=2))
    bob: Any = UserFactory(username="bob", last_login=now - timedelta(days=10))
    carol: Any = UserFactory(username="carol")  # a device synced yesterday
    dave: Any = UserFactory(username="dave", last_login=now - timedelta(days=40))
    erin: Any = UserFactory(username="erin", last_login=now - timedelta(days=40))
    frank: Any = UserFactory(username="frank")  # nothing ever
    Device.objects.create(
        user=carol, device_id="phone", created=now, last_used=now - timedelta(days=1)
    )
    Device.objects.create(
        user=erin, device_id="old", created=now, last_used=now - timedelta(days=31)
    )
    subs = {
        name: subscribe(user, f"https://feeds.example/{name}.xml")
        for name, user in (("alice", alice), ("carol", carol), ("dave", dave), ("bob", bob))
    }
    changed(subs["alice"], now - timedelta(hours=1))  # today
    changed(subs["carol"], now - timedelta(days=1))  # yesterday
    changed(subs["dave"], now - timedelta(days=20))  # active in 30 days, outside the fortnight
    changed(subs["bob"], now - timedelta(days=60))
    # What accounts.activity noted of those sign-ins, syncs and changes (staff's by its sign-in).
    for user, when in (
        (alice, now - timedelta(hours=1)),
        (carol, now - timedelta(days=1)),
        (bob, now - timedelta(days=10)),
        (dave, now - timedelta(days=20)),
        (erin, now - timedelta(days=31)),
    ):
        activity.activity_seen(user.pk, at=when)
    # Uploads: alice twice today (two actions each) and once yesterday; bob on the fortnight's
    # first day (13 days ago) and the day before it.
    first_day = (now - timedelta(days=13)).replace(hour=0, minute=0, second=1)
    for n, (user, received) in enumerate(
        [
            (alice, now - timedelta(hours=4)),
            (alice, now - timedelta(hours=4)),
            (alice, now - timedelta(hours=3)),
            (alice, now - timedelta(hours=3)),
            (alice, now - timedelta(days=1)),
            (bob, first_day),
            (bob, first_day),
            (bob, first_day - timedelta(seconds=2)),
        ]
    ):
        action(user, received.replace(microsecond=0), n)
    # Deletions: two pending (the oldest 3 hours old), one failed, one done; of accounts, one
    # pending and one failed.
    for user, status, hours, message in [
        (alice, "PENDING", 3, ""),
        (bob, "PENDING", 1, ""),
        (carol, "FAILURE", 2, "The deletion process encountered an error and was rolled back"),
        (dave, "SUCCESS", 5, ""),
    ]:
        Deletion.objects.create(
            user=user,
            guid=uuid.uuid4(),
            status=status,
            requested=now - timedelta(hours=hours),
            finished=None if status == "PENDING" else now - timedelta(hours=hours - 1),
            message=message,
        )
    AccountDeletion.objects.create(user=frank, username="frank", requested=now)
    AccountDeletion.objects.create(
        username="gone-<b>ünï</b>",
        status="FAILURE",
        requested=now - timedelta(days=1),
        finished=now - timedelta(days=1),
        message="A worker stopped on it 5 times",
    )
    # Failing feeds: addresses on a private network, which the fetcher refuses; checked an hour
    # apart, the latest last. One feed that was read is not among them.
    for n in range(3):
        clock.advance(hours=1)
        feed_check_run(url=f"http://10.255.0.{n + 1}/feed.xml", user_id=alice.pk)
    FeedCheck.objects.create(
        key_digest="f" * 64, url="https://fine.example/feed", checked=clock.now, result="guid"
    )
    return {"alice": alice, "staff": staff}


def test_the_figures_of_a_seeded_database(seeded, clock):
    overview = selectors.overview_read(viewer=EVERY_LIST)

    assert overview.accounts == selectors.Rows(7)
    # Staff (signed in now), alice (2 days ago), carol (a device yesterday); in 30 days also bob
    # (signed in 10 days ago) and dave (a subscription changed 20 days ago). Not erin (40 days,
    # her device 31 days) nor frank (never).
    assert overview.active == {7: 3, 30: 5}
    days = overview.sync_days
    assert len(days) == selectors.SYNC_DAYS
    assert days[-1].day == clock.now.date()
    assert [(d.uploads, d.subscriptions, d.accounts) for d in days if d.accounts] == [
        (1, 0, 1),  # bob's upload on the first day
        (1, 1, 2),  # yesterday: alice's upload, carol's change
        (2, 1, 1),  # today: alice's two uploads and her change
    ]
    assert days[0].uploads == 1
    assert overview.deletions.pending == 2
    assert overview.deletions.failed == 1
    assert overview.deletions.oldest_pending == clock.now - timedelta(hours=3 + 3)
    assert [d.username for d in overview.deletions.latest_failed] == ["carol"]
    assert overview.account_deletions.pending == 1
    assert overview.account_deletions.failed == 1
    assert overview.failing_feeds == 3
    assert [check.url for check in overview.latest_failing] == [
        "http://10.255.0.3/feed.xml",
        "http://10.255.0.2/feed.xml",
        "http://10.255.0.1/feed.xml",
    ]
    assert all(check.error for check in overview.latest_failing)
    # No broker in the tests: this process's feed checks, none waiting.
    assert overview.queues == selectors.Queues(broker=False, feed_checks=0)


def test_the_page_shows_the_figures(seeded):
    client = Client()
    client.force_login(seeded["staff"])
    body = page(client)

    assert "<h1>Overview</h1>" in body
    for heading in ("Accounts", "Syncs per day", "Deletions", "Failing feeds", "Queues"):
        assert f">{heading}</h2>" in body
    assert "Active in the last 7 days</dt><dd>3<" in body
    assert "Active in the last 30 days</dt><dd>5<" in body
    assert "3 feeds failed their last check." in body
    assert "http://10.255.0.3/feed.xml" in body
    assert "The deletion process encountered an error and was rolled back" in body
    # A name is text, whatever it holds.
    assert "The account gone-&lt;b&gt;ünï&lt;/b&gt;" in body
    assert "<b>ünï</b>" not in body
    assert "?status__exact=PENDING" in body
    assert "No broker (REDIS_URL is not set)" in body


def test_an_empty_service_shows_zeros(admin_client):
    body = page(admin_client)
    assert "0 feeds failed their last check." in body
    assert "Active in the last 30 days</dt><dd>1<" in body  # staff, signed in
    overview = selectors.overview_read(viewer=EVERY_LIST)
    assert not any(day.uploads or day.subscriptions for day in overview.sync_days)


def test_a_big_accounts_table_shows_postgresql_s_estimate(admin_client, monkeypatch):
    import core.admin

    monkeypatch.setattr(core.admin, "_estimated_rows", lambda table: 1_234_567)
    overview = selectors.overview_read(viewer=EVERY_LIST)
    if connection.vendor == "postgresql":
        assert str(overview.accounts) == "about 1,234,567"
        assert "The accounts are PostgreSQL's estimate." in page(admin_client)
    else:  # SQLite has no estimate: counted
        assert str(overview.accounts) == "1"


def test_counts_past_the_cap_say_more_than(db, monkeypatch):
    monkeypatch.setattr(EstimatedCountPaginator, "COUNT_CAP", 3)
    assert str(selectors.Rows(3)) == "3"
    assert str(selectors.Rows(4, exact=False)) == "more than 3"
    assert str(selectors.Rows(1_000_000, exact=False)) == "about 1,000,000"


def test_the_overview_reads_in_a_bounded_number_of_queries(
    seeded, clock, django_assert_max_num_queries
):
    client = Client()
    client.force_login(seeded["staff"])
    page(client)  # the session and user read once
    with django_assert_max_num_queries(13):
        page(client)
    # Ten times the rows: the same queries.
    now = clock.now
    for n in range(30):
        user: Any = UserFactory(last_login=now - timedelta(days=n))
        Device.objects.create(user=user, device_id="d", created=now, last_used=now)
        action(user, (now - timedelta(days=n % 14)).replace(microsecond=0), 1000 + n)
        Deletion.objects.create(user=user, guid=uuid.uuid4(), status="FAILURE", requested=now)
    with django_assert_max_num_queries(13):
        body = page(client)
    assert body.count("A subscription of") == selectors.FAILED_DELETIONS_SHOWN


@pytest.mark.postgresql
@pytest.mark.usefixtures("transactional_db")  # committed rows, for VACUUM outside a transaction
def test_every_figure_is_read_by_an_index_or_a_window(seeded):
    """With sequential scans priced out, no statement of the overview reads a table whole: an
    index answers each (`make scale` checks the plans PostgreSQL picks at a million accounts)."""
    statements, _ = statements_of(functools.partial(selectors.overview_read, viewer=EVERY_LIST))
    assert len(statements) <= 11
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexrelid::regclass::text FROM pg_index WHERE indpred IS NOT NULL")
        partial = {name for (name,) in cursor.fetchall()}
        # The plans follow the statistics of the seeded rows, not of what earlier tests left:
        # autovacuum's count of a table the suite filled and emptied, or the dead rows and the
        # index pages of the tests rolled back before (a bloated index on `received` made a
        # whole read of a small one cheaper: episodeaction_podcast_idx, filtered).
        tables = ", ".join(sorted(BIG))
        cursor.execute("VACUUM " + tables)
        for table in sorted(BIG):
            cursor.execute(f"REINDEX TABLE {table}")
        cursor.execute("ANALYZE " + tables)
        # A join of the test's few rows may be planned as a merge or hash join that reads a whole
        # index (auth_user_pkey); at scale a join of a window's rows is a nested loop on the key.
        cursor.execute("SET enable_seqscan = off")
        cursor.execute("SET enable_mergejoin = off")
        cursor.execute("SET enable_hashjoin = off")
        cursor.execute("SET enable_material = off")
        try:
            for sql, params in statements:
                if "pg_class" in sql or "LIMIT 10001" in sql:  # the estimate; a count capped
                    continue
                cursor.execute("EXPLAIN (FORMAT JSON) " + sql, params)
                for node in nodes(cursor.fetchone()[0][0]["Plan"]):
                    if node.get("Relation Name") not in BIG or "Scan" not in node["Node Type"]:
                        continue
                    assert node["Node Type"] != "Seq Scan", (sql, node)
                    assert (
                        "Index Cond" in node
                        or node["Node Type"] == "Bitmap Heap Scan"
                        or node.get("Index Name") in partial
                    ), (sql, {key: node.get(key) for key in ("Index Name", "Filter")})
        finally:
            cursor.execute("RESET enable_seqscan")
            cursor.execute("RESET enable_mergejoin")
            cursor.execute("RESET enable_hashjoin")
            cursor.execute("RESET enable_material")


@pytest.mark.postgresql
def test_the_indexes_the_overview_reads_by_exist(db):
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes")
        indexes = dict(cursor.fetchall())
    assert "(last_login, id)" in indexes["auth_user_last_login_idx"]
    assert "(last_used, user_id)" in indexes["device_last_used_idx"]
    assert "(subscription_changed, user_id)" in indexes["subscription_changed_idx"]
    assert "(received, user_id)" in indexes["episodeaction_received_day_idx"]


# --- Queues -----------------------------------------------------------------------------------


@contextmanager
def broker(url: str) -> Iterator[None]:
    """The Celery app sends its tasks to the broker at `url` for a while (the overview only
    reads it)."""
    conf = current_app.conf
    before = {"broker_url": conf.broker_url, "task_always_eager": conf.task_always_eager}
    conf.update(broker_url=url, task_always_eager=False)
    try:
        yield
    finally:
        conf.update(**before)


def test_the_queues_of_a_redis_broker(admin_client):
    with servers.redis() as server, broker(server.url):
        client = redis.Redis.from_url(server.url)
        client.lpush("deletions", "a", "b", "c")
        client.lpush(f"feeds{Channel.sep}3", "d", "e")  # a message of priority 3
        client.lpush("feeds", "f")
        client.hset(Channel.unacked_key, mapping={"x": "1", "y": "2"})

        queues = selectors.queues_read()
        body = page(admin_client)

    assert queues.broker
    assert {q.name: q.waiting for q in queues.queues} == {
        "celery": 0,
        "deletions": 3,
        "feeds": 3,
        "imports": 0,
    }
    assert queues.unacknowledged == 2
    assert '<th scope="row">deletions</th><td class="n">3</td>' in body
    assert "Taken by workers" in body


def test_a_broker_that_does_not_answer_is_said(admin_client, settings):
    with servers.redis() as server:
        url = server.url
    with broker(url):  # stopped: nothing listens there
        queues = selectors.queues_read()
        body = page(admin_client)
    assert [q.waiting for q in queues.queues] == [None] * len(settings.QUEUES)
    assert body.count("the broker did not answer") == len(settings.QUEUES)
