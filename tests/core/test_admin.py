"""What every admin list shares (core.admin): a number of queries that does not grow with the
rows, and on a big table (docs/operations.md, "The admin") no count of the whole table, only
searches, filters and sorts an index answers, and pages that end before a long offset."""

from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

import core.admin
from subscriptions.services import AddEntry, subscription_add_many
from tests.factories import UserFactory
from tests.helpers import listed, make_deletion, subscribe, substring_searches

SUBSCRIPTIONS = "/admin/subscriptions/subscription/"
DELETIONS = "/admin/deletions/deletion/"


def count_queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return len(queries)


@pytest.mark.parametrize("url", [SUBSCRIPTIONS, f"{SUBSCRIPTIONS}?q=many", DELETIONS])
def test_list_query_count_does_not_grow_with_rows(
    admin_client, alice, django_assert_max_num_queries, url
):
    subscribe(alice, "https://many.example/0")
    make_deletion(alice, "FAILURE")
    few = count_queries(admin_client, url)
    subscription_add_many(
        user=alice, entries=[AddEntry(feed_url=f"https://many.example/{n}") for n in range(1, 30)]
    )
    for _ in range(29):
        make_deletion(alice, "SUCCESS")

    with django_assert_max_num_queries(few):
        response = admin_client.get(url)

    assert len(response.context["cl"].result_list) == 30


BIG_LISTS = [
    "/admin/episodes/episodeaction/",
    "/admin/subscriptions/subscription/",
    "/admin/auth/user/",
    "/admin/gpodder/device/",
    "/admin/deletions/deletion/",
    "/admin/feedchecks/feedcheck/",
    "/admin/feedchecks/feedepisode/",
]


@pytest.mark.parametrize("url", BIG_LISTS)
@pytest.mark.parametrize("query", ["", "?q=alpha"])
def test_a_big_tables_list_never_counts_the_whole_table(admin_client, alpha, beta, url, query):
    """Counting every row to number the pages would read a table of millions on each list
    page: unfiltered, PostgreSQL's estimate; filtered, a count capped at 10,001 rows."""
    with CaptureQueriesContext(connection) as queries:
        response = admin_client.get(url + query)
    assert response.status_code == 200
    counts = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("SELECT COUNT(")]
    assert counts or not query, "the filtered list is counted, up to the cap"
    uncapped = [sql for sql in counts if "LIMIT 10001" not in sql]
    assert not uncapped, uncapped


def test_past_the_cap_the_pages_are_numbered_by_the_estimate(admin_client, alice, monkeypatch):
    from core.admin import EstimatedCountPaginator

    monkeypatch.setattr(EstimatedCountPaginator, "COUNT_CAP", 150)
    subscription_add_many(
        user=alice, entries=[AddEntry(feed_url=f"https://many.example/{n}.xml") for n in range(250)]
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE subscriptions_subscription")
    with CaptureQueriesContext(connection) as queries:
        body = admin_client.get(SUBSCRIPTIONS).content.decode()
    assert not [q for q in queries.captured_queries if q["sql"].startswith("SELECT COUNT(")]
    assert "250 subscriptions" in body
    assert "?p=2" in body  # numbered pages, from the estimate
    # Filtered (a search by username, as a big table's search is): counted up to the cap + 1.
    body = admin_client.get(SUBSCRIPTIONS, {"q": "alic"}).content.decode()
    assert "151 subscriptions" in body


# --- Lists of big tables ----------------------------------------------------------------------
# Once a table is past the cap by PostgreSQL's estimate, each list page, search, filter and
# sort must be one an index answers (core.admin.BigTableAdmin). On a test's few rows the
# planner's choices say nothing about that (it reads a tiny table whole, whatever the indexes):
# these tests check what is asked (no substring search, no unindexed filter or sort), and
# `make scale` checks the plans of the same lists among a million accounts.


EVERY_BIG_LIST = [
    *BIG_LISTS,
    "/admin/accounts/apppassword/",
    "/admin/token_blacklist/outstandingtoken/",
    "/admin/token_blacklist/blacklistedtoken/",
]


@pytest.fixture
def big(monkeypatch, alice, bob, alpha, beta) -> None:
    """Alice and Bob with a row in every big table, and every table past the cap."""
    from rest_framework_simplejwt.token_blacklist.models import BlacklistedToken, OutstandingToken

    from accounts.services import app_password_create, refresh_token_for
    from deletions.services import deletion_request
    from episodes.actions import SentAction
    from episodes.services import actions_upload
    from feedchecks.models import FeedCheck, FeedEpisode
    from subscriptions import feeds

    for user in (alice, bob):
        app_password_create(user=user, name="Phone")
        refresh_token_for(user)
        actions_upload(
            user=user,
            actions=[
                SentAction(alpha.feed_url, "https://alpha.example/1.mp3", "play", None, "phone", "")
            ],
        )
    BlacklistedToken.objects.create(token=OutstandingToken.objects.filter(user=alice).get())
    deletion_request(user=bob, guid=beta.guid)
    check = FeedCheck.objects.create(
        key_digest=feeds.feed_key_digest(alpha.feed_url), url=alpha.feed_url, title="Alpha"
    )
    FeedEpisode.objects.create(feed=check, item_key="k", guid="g1", title="Pilot", url="u")
    # A million rows by PostgreSQL's estimate, in each table: pages of a list then end in
    # LIMIT, as on a large instance.
    monkeypatch.setattr(core.admin, "_estimated_rows", lambda table: 1_000_000)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def big_list(client: Client, url: str, query: dict[str, Any] | None = None) -> tuple[Any, list]:
    """The list's answer, and its statements (SQL and parameters)."""
    from tests.helpers import statements_of

    statements, response = statements_of(lambda: client.get(url, query or {}))
    assert response.status_code == 200, response.content[:500]
    return response, statements


@pytest.mark.parametrize("url", EVERY_BIG_LIST)
def test_a_big_tables_list_page_shows_its_rows_newest_first(admin_client, big, url):
    response, statements = big_list(admin_client, url)
    table = response.context["cl"].model._meta.db_table
    assert f'ORDER BY "{table}"."id" DESC' in statements[-1][0] or url.endswith("/user/")
    assert response.context["cl"].result_list, "the list shows its rows"


@pytest.mark.parametrize("url", EVERY_BIG_LIST)
@pytest.mark.parametrize("term", ["alic", "alice", "https://ALPHA.example:443/feed.xml", "x%_"])
def test_a_big_tables_search_never_looks_for_a_substring(admin_client, big, url, term):
    _, statements = big_list(admin_client, url, {"q": term})
    assert not substring_searches(statements)


@pytest.mark.parametrize(
    ("url", "term", "expected"),
    [
        # By username, or its beginning: the account's rows only.
        (SUBSCRIPTIONS, "alic", {"https://alpha.example/feed.xml"}),
        (SUBSCRIPTIONS, "bob", {"https://beta.example/podcast?format=rss"}),
        # By feed URL, in any spelling of its matching key.
        (SUBSCRIPTIONS, "HTTPS://Alpha.Example:443/feed.xml", {"https://alpha.example/feed.xml"}),
        # Not by a substring: no index has those.
        (SUBSCRIPTIONS, "alpha.example", set()),
        ("/admin/episodes/episodeaction/", "bo", {"https://alpha.example/1.mp3"}),
        ("/admin/feedchecks/feedcheck/", "https://alpha.example/feed.xml", {"Alpha"}),
        ("/admin/feedchecks/feedepisode/", "https://alpha.example/feed.xml", {"Pilot"}),
        ("/admin/feedchecks/feedepisode/", "Pilot", set()),
    ],
)
def test_a_big_tables_search_finds_by_account_or_url(admin_client, big, url, term, expected):
    response, _ = big_list(admin_client, url, {"q": term})
    shown = {
        getattr(row, "feed_url", None) or getattr(row, "episode", None) or row.title
        for row in response.context["cl"].result_list
    }
    assert shown == expected


def test_a_big_user_list_finds_an_account_by_email_through_its_index(admin_client, big, alice):
    alice.email = "Alice@Example.net"
    alice.save()
    response, statements = big_list(admin_client, "/admin/auth/user/", {"q": "alice@example.NET"})
    assert [u.username for u in response.context["cl"].result_list] == ["alice"]
    assert not substring_searches(statements)
    with connection.cursor() as cursor:  # the index the search is answered by
        cursor.execute("SET enable_seqscan = off")
        sql, params = next(
            (sql, params)
            for sql, params in statements
            if 'UPPER("auth_user"."email"' in sql and not sql.startswith("SELECT COUNT")
        )
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute("RESET enable_seqscan")
    assert "auth_user_email_upper_idx" in plan, plan


def test_a_big_tables_list_keeps_only_the_filters_and_sorts_an_index_answers(admin_client, big):
    response, _ = big_list(admin_client, "/admin/subscriptions/subscription/")
    assert not response.context["cl"].has_filters
    assert response.context["cl"].sortable_by == ()
    response, _ = big_list(admin_client, DELETIONS, {"status__exact": "PENDING"})
    assert [f.title for f in response.context["cl"].filter_specs] == ["status"]
    assert len(response.context["cl"].result_list) == 1
    response, _ = big_list(admin_client, "/admin/auth/user/")
    assert response.context["cl"].sortable_by == ["username"]
    # A sort by a column the list no longer offers is ignored, not read across the table.
    _, statements = big_list(admin_client, "/admin/gpodder/device/", {"o": "3"})
    assert 'ORDER BY "gpodder_device"."id" DESC' in statements[-1][0]
    assert "caption" not in statements[-1][0].split("ORDER BY")[1]


def test_a_small_tables_list_keeps_every_search_filter_and_sort(admin_client, alpha, beta):
    """Below the cap (a home server), Django's own search: a substring of a URL."""
    assert listed(admin_client, SUBSCRIPTIONS + "?q=alpha.example") == {alpha.pk}
    response = admin_client.get(SUBSCRIPTIONS)
    assert response.context["cl"].has_filters


def test_a_big_tables_pages_end_before_a_long_offset(admin_client, big):
    """The estimate says a million rows: the pages stop at the 10,000th row, and the last
    linked page reads no further (OFFSET 9,900), whatever page is asked for by hand."""
    response, _ = big_list(admin_client, SUBSCRIPTIONS)
    assert response.context["cl"].paginator.num_pages == 100
    assert "?p=100" in response.content.decode()
    assert "?p=101" not in response.content.decode()
    response = admin_client.get(SUBSCRIPTIONS, {"p": "5000"})
    assert response.status_code == 302, "out of range"
    assert "e=1" in response["Location"]


@pytest.mark.parametrize(
    "query",
    [
        {"feed_url__contains": "alpha"},
        {"podcast__icontains": "alpha"},
        {"is_subscribed__exact": "0"},
        {"user__username__icontains": "ali"},
    ],
)
def test_a_big_tables_filters_typed_into_the_address_are_refused(admin_client, big, query):
    for url in (SUBSCRIPTIONS, "/admin/episodes/episodeaction/"):
        response = admin_client.get(url, query)
        assert response.status_code in (302, 400), (url, query, response.status_code)


def test_a_big_tables_lookups_an_index_answers_are_allowed(admin_client, big, alice, alpha):
    assert listed(admin_client, f"{SUBSCRIPTIONS}?user__id__exact={alice.pk}") == {alpha.pk}
    assert len(listed(admin_client, f"{DELETIONS}?status__exact=PENDING")) == 1
    from feedchecks.models import FeedCheck

    check = FeedCheck.objects.get()
    url = f"/admin/feedchecks/feedepisode/?feed__id__exact={check.pk}"
    assert len(listed(admin_client, url)) == 1


def test_a_big_users_list_finds_the_exact_account_among_many_of_its_prefix(admin_client, big):
    """Any 100 of the accounts starting with a name may be listed, but the account of that
    very name always is; an address that looks like an email finds a username too."""
    for n in range(150):
        UserFactory(username=f"ann{n:03d}")
    ann: Any = UserFactory(username="ann")
    carol: Any = UserFactory(username="carol@example.com", email="")
    assert ann.pk in listed(admin_client, "/admin/auth/user/?q=ann")
    assert listed(admin_client, "/admin/auth/user/?q=carol@example.com") == {carol.pk}


def test_the_token_lists_are_read_only(admin_client, big):
    from rest_framework_simplejwt.token_blacklist.models import BlacklistedToken

    listed_tokens = admin_client.get("/admin/token_blacklist/blacklistedtoken/")
    assert "delete_selected" not in listed_tokens.content.decode()
    assert admin_client.get("/admin/token_blacklist/blacklistedtoken/add/").status_code == 403
    blacklisted = BlacklistedToken.objects.get()
    change = f"/admin/token_blacklist/blacklistedtoken/{blacklisted.pk}/delete/"
    assert admin_client.post(change, {"post": "yes"}).status_code == 403
    assert BlacklistedToken.objects.filter(pk=blacklisted.pk).exists()


def test_a_table_never_analysed_is_big_by_its_rows(db, monkeypatch):
    """Right after a restore or a bulk load PostgreSQL has no estimate (-1): counting past the
    cap decides."""
    from core.admin import EstimatedCountPaginator, table_is_big
    from subscriptions.models import Subscription

    monkeypatch.setattr(core.admin, "_estimated_rows", lambda table: -1)
    monkeypatch.setattr(EstimatedCountPaginator, "COUNT_CAP", 2)
    owner = UserFactory()
    for n in range(2):
        subscribe(owner, f"https://never-analysed.example/{n}.xml")
    assert not table_is_big(Subscription)
    subscribe(owner, "https://never-analysed.example/2.xml")
    assert table_is_big(Subscription)


def test_the_episode_title_search_is_off_while_the_catalogue_is_big(admin_client, big, monkeypatch):
    """Few actions, a big catalogue: a title search would read the catalogue's titles."""
    monkeypatch.setattr(
        core.admin,
        "_estimated_rows",
        lambda table: 1_000_000 if table == "feedchecks_feedepisode" else 5,
    )
    _, statements = big_list(admin_client, "/admin/episodes/episodeaction/", {"q": "Pilot"})
    assert not any('UPPER("feedchecks_feedepisode"."title"' in sql for sql, _ in statements)


def test_a_big_list_asks_for_its_tables_size_once_per_page(admin_client, big, monkeypatch):
    """Its search, filters, each lookup of the address and its sorts share one answer; the
    paginator (which has no request) asks once more."""
    asked: list[str] = []

    def estimate(table: str) -> int:
        asked.append(table)
        return 1_000_000

    monkeypatch.setattr(core.admin, "_estimated_rows", estimate)
    response = admin_client.get(DELETIONS, {"q": "alic", "status__exact": "PENDING", "o": "2"})
    assert response.status_code == 200
    assert asked.count("deletions_deletion") <= 2, asked
