"""The Django admin for staff and the ensure_staff command (docs/operations.md, "Staff")."""

import re
import uuid
from datetime import timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

import core.admin
from deletions.models import Deletion
from subscriptions.models import Subscription
from subscriptions.services import (
    AddEntry,
    SubscriptionUpdate,
    subscription_add_many,
    subscription_update,
)
from tests.factories import UserFactory
from tests.helpers import substring_searches

SUBSCRIPTIONS = "/admin/subscriptions/subscription/"
DELETIONS = "/admin/deletions/deletion/"


@pytest.fixture
def staff(db: None) -> Any:
    return UserFactory(is_staff=True, is_superuser=True)


@pytest.fixture
def admin_client(staff: Any) -> Client:
    client = Client()
    client.force_login(staff)
    return client


def subscribe(user: Any, feed_url: str) -> Subscription:
    result = subscription_add_many(user=user, entries=[AddEntry(feed_url=feed_url)])
    assert not result.failure
    return result.success[0]


@pytest.fixture
def alice(db: None) -> Any:
    return UserFactory(username="alice")


@pytest.fixture
def bob(db: None) -> Any:
    return UserFactory(username="bob")


@pytest.fixture
def alpha(alice: Any) -> Subscription:
    return subscribe(alice, "https://alpha.example/feed.xml")


@pytest.fixture
def beta(bob: Any) -> Subscription:
    return subscribe(bob, "https://beta.example/podcast?format=rss")


def listed(client: Client, url: str) -> set[int]:
    response = client.get(url)
    assert response.status_code == 200, response.content[:500]
    return {obj.pk for obj in response.context["cl"].result_list}


# --- Subscriptions ----------------------------------------------------------------------------


def test_subscription_list_loads(admin_client, alpha, beta):
    assert listed(admin_client, SUBSCRIPTIONS) == {alpha.pk, beta.pk}


@pytest.mark.parametrize(
    "term",
    ["alpha.example", "https://alpha.example/feed.xml", "ALPHA.EXAMPLE", "feed.xml"],
)
def test_search_by_feed_url(admin_client, alpha, beta, term):
    assert listed(admin_client, f"{SUBSCRIPTIONS}?q={term}") == {alpha.pk}


def test_search_by_feed_url_with_a_query_string(admin_client, alpha, beta):
    assert listed(admin_client, f"{SUBSCRIPTIONS}?q=format%3Drss") == {beta.pk}


def test_search_by_guid(admin_client, alpha, beta):
    assert listed(admin_client, f"{SUBSCRIPTIONS}?q={alpha.guid}") == {alpha.pk}
    assert listed(admin_client, f"{SUBSCRIPTIONS}?q={str(beta.guid).upper()}") == {beta.pk}


def test_search_by_username(admin_client, alpha, beta, bob):
    assert listed(admin_client, f"{SUBSCRIPTIONS}?q=bob") == {beta.pk}


@pytest.mark.parametrize("term", ["nothing-matches", uuid.uuid4(), "a" * 3000])
def test_search_that_matches_nothing_is_an_empty_list(admin_client, alpha, term):
    assert listed(admin_client, f"{SUBSCRIPTIONS}?q={term}") == set()


@pytest.mark.parametrize("term", ["%00", "%27", "%22", "%5C", "%ED%A0%80", "%25"])
def test_odd_search_terms_do_not_break_the_list(admin_client, alpha, term):
    assert listed(admin_client, f"{SUBSCRIPTIONS}?q={term}") <= {alpha.pk}


def test_filter_by_subscribed(admin_client, alice, alpha):
    gone_quiet = subscribe(alice, "https://quiet.example/feed")
    subscription_update(
        user=alice, guid=gone_quiet.guid, change=SubscriptionUpdate(is_subscribed=False)
    )

    assert listed(admin_client, f"{SUBSCRIPTIONS}?is_subscribed__exact=1") == {alpha.pk}
    assert listed(admin_client, f"{SUBSCRIPTIONS}?is_subscribed__exact=0") == {gone_quiet.pk}


def test_filter_by_deleted(admin_client, alice, alpha):
    removed = subscribe(alice, "https://removed.example/feed")
    Subscription.objects.filter(pk=removed.pk).update(deleted=timezone.now(), is_subscribed=False)

    assert listed(admin_client, f"{SUBSCRIPTIONS}?deleted=yes") == {removed.pk}
    assert listed(admin_client, f"{SUBSCRIPTIONS}?deleted=no") == {alpha.pk}


def test_change_page_shows_the_guid_history(admin_client, alice, alpha):
    first = alpha.guid
    second, third = uuid.uuid4(), uuid.uuid4()
    for new in (second, third):
        subscription_update(user=alice, guid=first, change=SubscriptionUpdate(new_guid=new))

    response = admin_client.get(f"{SUBSCRIPTIONS}{alpha.pk}/change/")

    assert response.status_code == 200
    page = response.content.decode()
    for guid in (first, second, third):
        assert str(guid) in page
    assert "alpha.example/feed.xml" in page


def test_search_finds_a_subscription_by_its_current_guid_after_a_change(admin_client, alice, alpha):
    new = uuid.uuid4()
    subscription_update(user=alice, guid=alpha.guid, change=SubscriptionUpdate(new_guid=new))

    assert listed(admin_client, f"{SUBSCRIPTIONS}?q={new}") == {alpha.pk}


def test_admin_cannot_bypass_the_rules_by_deleting_rows(admin_client, alpha):
    response = admin_client.post(f"{SUBSCRIPTIONS}{alpha.pk}/delete/", {"post": "yes"})

    assert response.status_code == 403
    assert Subscription.objects.filter(pk=alpha.pk, deleted__isnull=True).exists()


def test_admin_cannot_bypass_the_rules_by_editing_rows(admin_client, alpha):
    admin_client.post(
        f"{SUBSCRIPTIONS}{alpha.pk}/change/",
        {"feed_url": "https://elsewhere.example/", "guid": str(uuid.uuid4()), "is_subscribed": ""},
    )

    alpha.refresh_from_db()
    assert alpha.feed_url == "https://alpha.example/feed.xml"
    assert alpha.is_subscribed is True


def test_subscriptions_admin_is_for_staff_only(alpha, alice):
    client = Client()
    client.force_login(alice)

    response = client.get(SUBSCRIPTIONS)

    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


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


# --- Deletions --------------------------------------------------------------------------------


def make_deletion(user: Any, status: str) -> Deletion:
    return Deletion.objects.create(
        user=user, guid=uuid.uuid4(), status=status, requested=timezone.now()
    )


def test_filter_deletions_by_status(admin_client, alice):
    failed = make_deletion(alice, "FAILURE")
    make_deletion(alice, "SUCCESS")
    make_deletion(alice, "PENDING")

    assert listed(admin_client, f"{DELETIONS}?status__exact=FAILURE") == {failed.pk}
    assert len(listed(admin_client, DELETIONS)) == 3


def test_deletion_change_page_loads(admin_client, alice):
    deletion = make_deletion(alice, "FAILURE")

    response = admin_client.get(f"{DELETIONS}{deletion.pk}/change/")

    assert response.status_code == 200
    assert str(deletion.guid) in response.content.decode()


# --- Users ------------------------------------------------------------------------------------


def test_staff_create_accounts_that_log_in_with_argon2(admin_client, anon):
    password = "a long and unusual passphrase 42"

    response = admin_client.post(
        "/admin/auth/user/add/",
        {
            "username": "newcomer",
            "password1": password,
            "password2": password,
            "usable_password": "true",
        },
    )

    assert response.status_code == 302, response.content[:1000]
    user = get_user_model().objects.get(username="newcomer")
    assert user.password.startswith("argon2")
    login = anon.post(
        "/v1/auth/login", {"username": "newcomer", "password": password}, format="json"
    )
    assert login.status_code == 200, login.content


def test_user_list_loads(admin_client, alice, bob):
    response = admin_client.get("/admin/auth/user/?q=alice")

    assert response.status_code == 200
    assert {u.username for u in response.context["cl"].result_list} == {"alice"}


# --- ensure_staff -----------------------------------------------------------------------------


def ensure_staff() -> str:
    out = StringIO()
    call_command("ensure_staff", stdout=out)
    return out.getvalue()


def printed_password(output: str) -> str:
    match = re.search(r"with password: (\S+)", output)
    assert match, output
    return match.group(1)


def test_ensure_staff_creates_admin_when_there_is_no_staff(db, anon):
    UserFactory()  # not staff

    output = ensure_staff()

    admin = get_user_model().objects.get(username="admin")
    assert admin.is_staff
    assert admin.is_superuser
    assert admin.is_active
    assert admin.password.startswith("argon2")
    password = printed_password(output)
    assert admin.check_password(password)
    login = anon.post("/v1/auth/login", {"username": "admin", "password": password}, format="json")
    assert login.status_code == 200, login.content


def test_ensure_staff_passwords_differ_between_installs(db):
    first = printed_password(ensure_staff())
    get_user_model().objects.all().delete()

    second = printed_password(ensure_staff())

    assert first != second
    assert len(second) >= 16


def test_ensure_staff_password_is_letters_and_digits_for_copying_off_a_terminal(db):
    passwords = set()
    for _ in range(12):
        passwords.add(printed_password(ensure_staff()))
        get_user_model().objects.all().delete()

    assert len(passwords) == 12
    assert all(re.fullmatch(r"[A-Za-z0-9]{24}", password) for password in passwords), passwords


def test_ensure_staff_does_nothing_the_second_time(db):
    first_output = ensure_staff()
    admin = get_user_model().objects.get(username="admin")

    second_output = ensure_staff()

    assert get_user_model().objects.count() == 1
    admin_again = get_user_model().objects.get(username="admin")
    assert admin_again.password == admin.password
    assert printed_password(first_output) not in second_output


def test_ensure_staff_does_nothing_when_staff_exist(staff):
    output = ensure_staff()

    assert not get_user_model().objects.filter(username="admin").exists()
    assert get_user_model().objects.count() == 1
    assert not re.search(r"password:\s*\S", output, re.IGNORECASE)


def failed_deletion(sub: Subscription, **extra: Any) -> Deletion:
    """A failed deletion of `sub`, stamped as deletion_request stamps it: after its last change."""
    return Deletion.objects.create(
        user=sub.user,
        subscription=sub,
        guid=sub.guid,
        status=Deletion.Status.FAILURE,
        requested=sub.subscription_changed + timedelta(milliseconds=1),
        **extra,
    )


def test_retry_action_reruns_a_failed_deletion_through_the_service(
    admin_client, alice, alpha, django_capture_on_commit_callbacks
):
    deletion = failed_deletion(
        alpha, message="The deletion process encountered an error and was rolled back"
    )

    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            "/admin/deletions/deletion/",
            {"action": "retry", "_selected_action": [deletion.pk]},
            follow=True,
        )

    assert response.status_code == 200
    assert "Sent 1 deletion(s) again." in response.content.decode()
    deletion.refresh_from_db()
    assert deletion.status == Deletion.Status.SUCCESS
    assert Subscription.objects.get(pk=alpha.pk).deleted is not None


def test_retry_action_from_the_failure_filter_reports_no_skips(
    admin_client, alice, alpha, django_capture_on_commit_callbacks
):
    """Sending the deletion again takes it out of the FAILURE filter the list was shown with."""
    deletion = failed_deletion(alpha)

    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            "/admin/deletions/deletion/?status__exact=FAILURE",
            {"action": "retry", "_selected_action": [deletion.pk]},
            follow=True,
        )

    page = response.content.decode()
    assert "Sent 1 deletion(s) again." in page
    assert "Skipped" not in page


def test_retry_action_skips_successful_deletions(admin_client, alice, alpha):
    deletion = Deletion.objects.create(
        user=alice,
        subscription=alpha,
        guid=alpha.guid,
        status=Deletion.Status.SUCCESS,
        requested=alpha.subscription_changed,
    )

    response = admin_client.post(
        "/admin/deletions/deletion/",
        {"action": "retry", "_selected_action": [deletion.pk]},
        follow=True,
    )

    assert "Skipped 1" in response.content.decode()
    deletion.refresh_from_db()
    assert deletion.status == Deletion.Status.SUCCESS


def test_search_by_an_earlier_feed_url(admin_client, alice, alpha, beta):
    update = SubscriptionUpdate(new_feed_url="https://moved.example.net/new-feed.xml")
    subscription_update(user=alice, guid=alpha.guid, change=update)

    assert listed(admin_client, f"{SUBSCRIPTIONS}?q={alpha.feed_url}") == {alpha.pk}
    assert listed(admin_client, f"{SUBSCRIPTIONS}?q=moved.example.net") == {alpha.pk}


# --- Users: counts, deactivation, password reset -----------------------------------------------


def test_user_list_shows_subscription_counts_in_a_fixed_number_of_queries(
    admin_client, alice, bob, alpha, django_assert_max_num_queries
):
    subscribe(alice, "https://alpha.example/second")
    dropped = subscribe(alice, "https://alpha.example/dropped")
    subscription_update(
        user=alice, guid=dropped.guid, change=SubscriptionUpdate(is_subscribed=False)
    )
    gone = subscribe(alice, "https://alpha.example/gone")
    Subscription.objects.filter(pk=gone.pk).update(is_subscribed=False, deleted=gone.created)
    for n in range(5):
        subscribe(UserFactory(), f"https://many.example/{n}")

    with django_assert_max_num_queries(12):
        response = admin_client.get("/admin/auth/user/")

    assert response.status_code == 200
    rows = {u.username: u for u in response.context["cl"].result_list}
    assert (rows["alice"]._subscribed, rows["alice"]._subscriptions) == (2, 4)
    assert (rows["bob"]._subscribed, rows["bob"]._subscriptions) == (0, 0)
    assert "subscriptions (all)" in response.content.decode().lower()


def test_deactivate_action_stops_the_users_tokens(admin_client, staff, anon):
    user: Any = UserFactory(username="leaver", with_password="a long and unusual passphrase 42")
    login = anon.post(
        "/v1/auth/login",
        {"username": "leaver", "password": "a long and unusual passphrase 42"},
        format="json",
    ).json()

    anon.credentials(HTTP_AUTHORIZATION=f"Bearer {login['access_token']}")
    assert anon.get("/v1/subscriptions").status_code == 200  # the user is now remembered
    anon.credentials()

    response = admin_client.post(
        "/admin/auth/user/",
        {"action": "deactivate", "_selected_action": [user.pk, staff.pk]},
        follow=True,
    )

    assert "Deactivated 1 user(s)." in response.content.decode()
    assert "You were left active: staff cannot deactivate themselves." in response.content.decode()
    user.refresh_from_db()
    staff.refresh_from_db()
    assert not user.is_active
    assert staff.is_active  # never oneself
    anon.credentials(HTTP_AUTHORIZATION=f"Bearer {login['access_token']}")
    assert anon.get("/v1/subscriptions").status_code == 401
    anon.credentials()
    refresh = anon.post(
        "/v1/auth/refresh", {"refresh_token": login["refresh_token"]}, format="json"
    )
    assert refresh.status_code == 401


def test_activate_action_lets_a_deactivated_user_log_in_again(admin_client, anon):
    user: Any = UserFactory(username="returning", with_password="a long and unusual passphrase 9")
    type(user).objects.filter(pk=user.pk).update(is_active=False)

    response = admin_client.post(
        "/admin/auth/user/", {"action": "activate", "_selected_action": [user.pk]}, follow=True
    )

    assert "Activated 1 user(s)." in response.content.decode()
    login = anon.post(
        "/v1/auth/login",
        {"username": "returning", "password": "a long and unusual passphrase 9"},
        format="json",
    )
    assert login.status_code == 200


def test_staff_reset_a_users_password(admin_client, anon):
    user: Any = UserFactory(username="forgetful", with_password="the old passphrase that was lost")
    password = "a brand new and unusual passphrase 7"

    response = admin_client.post(
        f"/admin/auth/user/{user.pk}/password/",
        {"password1": password, "password2": password, "usable_password": "true"},
    )

    assert response.status_code == 302, response.content[:1000]
    login = anon.post(
        "/v1/auth/login", {"username": "forgetful", "password": password}, format="json"
    )
    assert login.status_code == 200


def test_subscription_list_shows_the_last_change_and_finds_a_users_by_username(
    admin_client, alpha, beta
):
    response = admin_client.get(SUBSCRIPTIONS, {"q": alpha.user.username})

    assert {s.pk for s in response.context["cl"].result_list} == {alpha.pk}
    assert "last change" in response.content.decode().lower()


# --- OPML management commands -------------------------------------------------------------------


OPML_FIXTURES = Path(__file__).parent / "fixtures" / "opml"


def test_import_opml_command_adds_through_the_service_with_a_progress_bar(alice, tmp_path):
    out, err = StringIO(), StringIO()

    call_command(
        "import_opml", "alice", str(OPML_FIXTURES / "overcast.opml"), stdout=out, stderr=err
    )

    assert "Added 50 feed(s) to alice; 0 failed." in out.getvalue()
    assert "Importing: 100%" in err.getvalue()
    assert Subscription.objects.filter(user=alice, is_subscribed=True).count() == 50


def test_import_opml_command_takes_files_over_the_api_limits(alice, tmp_path, settings):
    settings.MAX_ADD_ENTRIES = 7  # batches of 7
    outlines = "".join(
        f'<outline type="rss" text="{n}" xmlUrl="https://big.example/{n}"/>' for n in range(30)
    )
    path = tmp_path / "big.opml"
    path.write_text(f'<opml version="2.0"><body>{outlines}<outline xmlUrl="nope"/></body></opml>')
    out, err = StringIO(), StringIO()

    call_command("import_opml", "alice", str(path), "--no-progress", stdout=out, stderr=err)

    assert "Added 30 feed(s) to alice; 1 failed." in out.getvalue()
    assert "Not added: nope: No protocol present" in err.getvalue()
    assert Subscription.objects.filter(user=alice).count() == 30


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"<opml><body>", "not well-formed"),
        (b'<!DOCTYPE x [<!ENTITY a "b">]><opml><body/></opml>', "DTD"),
        (b"<rss/>", "not an OPML document"),
    ],
)
def test_import_opml_command_refuses_what_is_not_opml(alice, tmp_path, content, message):
    path = tmp_path / "bad.opml"
    path.write_bytes(content)

    with pytest.raises(CommandError, match=message):
        call_command("import_opml", "alice", str(path), stdout=StringIO(), stderr=StringIO())
    assert not Subscription.objects.exists()


def test_opml_commands_refuse_unknown_users_and_files(alice, tmp_path):
    with pytest.raises(CommandError, match="No user named"):
        call_command("export_opml", "nobody", stdout=StringIO())
    with pytest.raises(CommandError, match="Cannot read"):
        call_command("import_opml", "alice", str(tmp_path / "missing.opml"), stdout=StringIO())


def test_export_opml_command_round_trips_with_import(alice, bob, alpha, beta, tmp_path):
    subscribe(alice, "https://alpha.example/b?x=1&y=2")
    path = tmp_path / "alice.opml"
    err = StringIO()

    call_command("export_opml", "alice", "-o", str(path), stderr=err)
    call_command("import_opml", "bob", str(path), "--no-progress", stdout=StringIO())

    assert "Wrote 2 feed(s)" in err.getvalue()
    assert "Exporting: 100%" in err.getvalue()
    assert b"beta.example" not in path.read_bytes()
    assert set(Subscription.objects.filter(user=bob).values_list("feed_url", flat=True)) == {
        "https://alpha.example/feed.xml",
        "https://alpha.example/b?x=1&y=2",
        beta.feed_url,
    }


def test_export_opml_command_to_stdout(alice, alpha):
    out = StringIO()

    call_command("export_opml", "alice", "--no-progress", stdout=out)

    assert out.getvalue().startswith('<?xml version="1.0" encoding="UTF-8"?>')
    assert 'xmlUrl="https://alpha.example/feed.xml"' in out.getvalue()


def test_export_opml_command_counts_what_it_wrote_without_a_progress_bar(alice, alpha, tmp_path):
    err = StringIO()

    call_command(
        "export_opml", "alice", "-o", str(tmp_path / "a.opml"), "--no-progress", stderr=err
    )

    assert "Wrote 1 feed(s)" in err.getvalue()
    assert "Exporting" not in err.getvalue()


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
