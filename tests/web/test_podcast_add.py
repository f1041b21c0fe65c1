"""Adding a podcast by its feed's address on the podcasts page (docs/web.md, "Podcasts"): the
APIs' rules (sanitising, spellings of one feed, the limits), each refusal in words with nothing
added, and the list's default filter and empty state."""

import re
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client

from deletions.models import Deletion
from episodes.models import EpisodeAction
from feedchecks import services as feedchecks
from feedchecks.models import FeedCheck
from subscriptions import feeds, signals
from subscriptions.models import Subscription, SubscriptionFeed, SubscriptionGuid
from tests.episodes.helpers import upload_actions
from tests.feedchecks.feedserver import FeedServer, rss
from tests.helpers import subscribe
from tests.web.test_hostile_forms import FORMS

ADD = "/podcasts/add/"


def add(page: Client, url: str) -> Any:
    """The form sent, and the page it leads to."""
    return page.post(ADD, {"url": url}, follow=True)


def shown(response: Any) -> str:
    return response.content.decode()


def errors(response: Any) -> list[str]:
    """The add form's errors, as the page shows them."""
    found = re.search(r'<ul class="errorlist" id="id_url_error">(.*?)</ul>', shown(response), re.S)
    return re.findall(r"<li>(.*?)</li>", found.group(1), re.S) if found else []


def messages_of(response: Any) -> str:
    found = re.search(r'<ul class="messages">(.*?)</ul>', shown(response), re.S)
    return found.group(1) if found else ""


def nothing_stored() -> bool:
    return not (
        Subscription.objects.exists()
        or SubscriptionFeed.objects.exists()
        or SubscriptionGuid.objects.exists()
    )


@pytest.fixture
def checks_wanted() -> Iterator[list[list[str]]]:
    """The URLs each add asked the feed checks for (subscriptions.signals.feed_check_wanted)."""
    asked: list[list[str]] = []

    def receiver(sender: Any, *, user_id: int, urls: Any, **kwargs: Any) -> None:
        asked.append(list(urls))

    signals.feed_check_wanted.connect(receiver, dispatch_uid="test_podcast_add")
    try:
        yield asked
    finally:
        signals.feed_check_wanted.disconnect(dispatch_uid="test_podcast_add")


# --- adding ------------------------------------------------------------------------------------


def test_an_address_is_added_at_once_and_its_feed_check_is_queued_as_the_api_queues_it(
    page: Client, person: Any, checks_wanted: list[list[str]]
) -> None:
    response = page.post(ADD, {"url": "https://feeds.example.com/show.xml"})
    sub = Subscription.objects.get(user=person)
    assert response.status_code == 302
    assert response["Location"] == f"/podcasts/?added={sub.guid}"
    assert sub.feed_url == "https://feeds.example.com/show.xml"
    assert sub.is_subscribed
    assert sub.deleted is None
    assert sub.guid == feeds.computed_guid(sub.feed_url)  # as POST /v1/subscriptions computes it
    assert checks_wanted == [["https://feeds.example.com/show.xml"]]

    listed = page.get(response["Location"])
    body = shown(listed)
    told = messages_of(listed)
    assert f'Added <a href="/podcasts/{sub.guid}/">https://feeds.example.com/show.xml</a>.' in told
    assert "title and artwork show once the server has read it" in told
    assert f'href="/podcasts/{sub.guid}/"' in body.split('id="status"')[1]  # on the list
    assert 'data-refresh="3"' in body  # the list fetches itself again for the title


def test_the_title_follows_once_the_feed_check_has_read_the_feed(
    page: Client, person: Any, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    server = FeedServer().start()
    server.feed("/show.xml", rss(guid=None))
    settings.FEED_CHECKS_ENABLED = True
    settings.FEED_FETCH_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    try:
        with django_capture_on_commit_callbacks(execute=True):
            response = page.post(ADD, {"url": server.url("/show.xml")})
        feedchecks.wait_for_background_checks(timeout=10)
    finally:
        server.stop()
    assert server.requests == ["/show.xml"]
    body = shown(page.get(response["Location"]))
    assert "A show" in body
    assert "data-refresh" not in body  # nothing left to wait for
    # Not private: the allowlist lets the checks fetch it, so no warning was given.
    assert "private" not in messages_of(page.get("/podcasts/"))


def test_the_list_stops_fetching_itself_after_a_minute_or_once_titled(
    page: Client, person: Any, clock: Any
) -> None:
    response = page.post(ADD, {"url": "https://slow.example/feed"})
    assert 'data-refresh="3"' in shown(page.get(response["Location"]))
    clock.advance(seconds=61)
    assert "data-refresh" not in shown(page.get(response["Location"]))
    clock.advance(seconds=-61)
    FeedCheck.objects.create(
        key_digest=feeds.feed_key_digest("https://slow.example/feed"),
        url="https://slow.example/feed",
        title="Slow Show",
    )
    assert "data-refresh" not in shown(page.get(response["Location"]))
    # Another guid in the address, or none, never refreshes anything.
    assert "data-refresh" not in shown(page.get("/podcasts/?added=not-a-guid"))
    assert "data-refresh" not in shown(page.get("/podcasts/"))


@pytest.mark.parametrize(
    ("sent", "stored"),
    [
        ("  https://example.com/feed.xml \t", "https://example.com/feed.xml"),
        ("example.com/feed.xml", "http://example.com/feed.xml"),
        ("feed://example.com/feed.xml", "http://example.com/feed.xml"),
        ("ITPC://example.com/feed.xml", "http://example.com/feed.xml"),
        ("example.com:8080/feed.xml", "http://example.com:8080/feed.xml"),
    ],
)
def test_addresses_are_sanitised_as_the_gpodder_api_sanitises_them(
    page: Client, person: Any, sent: str, stored: str
) -> None:
    response = add(page, sent)
    assert Subscription.objects.get(user=person).feed_url == stored
    if sent.strip() != stored:
        assert f"(read as {stored})" in messages_of(response)
    else:
        assert "read as" not in messages_of(response)


def test_spellings_of_one_feed_are_one_podcast_already_followed(page: Client, person: Any) -> None:
    add(page, "HTTPS://Example.com/feed/")
    sub = Subscription.objects.get(user=person)
    before = sub.subscription_changed

    response = add(page, "https://example.com/feed")
    told = messages_of(response)
    assert "You already follow this podcast" in told
    assert f'<a href="/podcasts/{sub.guid}/">HTTPS://Example.com/feed/</a>' in told
    assert response.redirect_chain == [("/podcasts/", 302)]
    sub.refresh_from_db()
    assert Subscription.objects.filter(user=person).count() == 1
    assert sub.feed_url == "HTTPS://Example.com/feed/"  # stored as first sent
    assert sub.subscription_changed == before  # nothing changed: apps see nothing new


def test_http_and_https_of_a_feed_followed_are_one_podcast_and_nothing_moves(
    page: Client, person: Any
) -> None:
    """The computed guid leaves the scheme out: the add reaches the podcast followed at https,
    and changes nothing (an app's add would move it to http)."""
    sub = subscribe(person, "https://example.com/feed")
    response = add(page, "example.com/feed")  # read as http://example.com/feed
    assert "You already follow this podcast" in messages_of(response)
    sub.refresh_from_db()
    assert sub.feed_url == "https://example.com/feed"
    assert Subscription.objects.filter(user=person).count() == 1


def test_an_unsubscribed_podcast_is_subscribed_again(page: Client, person: Any) -> None:
    sub = subscribe(person, "https://example.com/feed")
    page.post(f"/podcasts/{sub.guid}/subscription/", {})
    response = add(page, "https://EXAMPLE.com/feed/")
    assert f'Subscribed again to <a href="/podcasts/{sub.guid}/">' in messages_of(response)
    sub.refresh_from_db()
    assert sub.is_subscribed
    assert sub.feed_url == "https://example.com/feed"


def test_a_deleted_podcast_comes_back_without_its_history(
    page: Client, person: Any, django_capture_on_commit_callbacks: Any
) -> None:
    sub = subscribe(person, "https://example.com/feed")
    upload_actions(
        person, [{"podcast": sub.feed_url, "episode": "https://example.com/1.mp3", "action": "new"}]
    )
    with django_capture_on_commit_callbacks(execute=True):
        page.post(f"/podcasts/{sub.guid}/delete/")
    sub.refresh_from_db()
    assert sub.deleted is not None

    response = add(page, "https://example.com/feed")
    told = messages_of(response)
    assert "was deleted: adding it brought it back" in told
    assert "does not come back" in told
    sub.refresh_from_db()
    assert sub.deleted is None
    assert sub.is_subscribed
    assert not EpisodeAction.objects.filter(user=person).exists()
    assert Subscription.objects.filter(user=person).count() == 1


def test_adding_a_podcast_being_deleted_stops_the_deletion(page: Client, person: Any) -> None:
    sub = subscribe(person, "https://example.com/feed")
    deletion = Deletion.objects.create(
        user=person, subscription=sub, guid=sub.guid, requested=sub.subscription_changed
    )
    response = add(page, "https://example.com/feed")
    assert "its deletion, still waiting, will not go ahead" in messages_of(response)
    sub.refresh_from_db()
    # The deletion's worker then finds a later change, and deletes nothing (docs/api.md).
    assert sub.subscription_changed > deletion.requested


def test_unicode_and_markup_in_an_address_are_shown_as_text(page: Client, person: Any) -> None:
    response = add(page, "https://例え.jp/フィード?q=<b>&x=\"'")
    sub = Subscription.objects.get(user=person)
    assert sub.feed_url == "https://例え.jp/フィード?q=<b>&x=\"'"
    told = messages_of(response)
    assert "<b>" not in told
    assert "https://例え.jp/フィード?q=&lt;b&gt;&amp;x=&quot;&#x27;" in told


# --- private addresses -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://192.168.1.20/feed.xml",
        "http://10.0.0.1:8080/feed",
        "http://localhost:8000/feed",
        "http://printer.localhost/feed",
        "http://[::1]/feed",
        "http://2130706433/feed",  # 127.0.0.1 in another spelling
        "http://[fe80::1]/feed",
    ],
)
def test_a_private_address_is_added_and_the_page_says_it_is_never_fetched(
    page: Client, person: Any, url: str
) -> None:
    """As the APIs do, any valid http(s) address is kept (an app on the same network may use
    it); the person is told the server will not read it."""
    response = add(page, url)
    assert Subscription.objects.get(user=person).feed_url == url
    told = messages_of(response)
    assert told.count("<li") == 1, told  # one message, not a promise beside a refusal
    assert "Added" in told
    assert "private or local network: the server does not fetch feeds there" in told
    assert "FEED_FETCH_ALLOWED_NETWORKS" in told
    assert "show once the server has read it" not in told
    # Nothing to wait for: the list does not fetch itself again for a title.
    assert response.redirect_chain[-1][0] == "/podcasts/"


def test_a_public_address_or_one_the_checks_may_fetch_has_no_warning(
    page: Client, person: Any, settings: Any
) -> None:
    assert "private" not in messages_of(add(page, "https://93.184.215.14/feed"))
    settings.FEED_FETCH_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    assert "private" not in messages_of(add(page, "http://127.0.0.1:8000/feed"))
    assert "private" not in messages_of(add(page, "http://localhost/feed"))
    # A name is not looked up: where it leads, the feed check learns.
    assert "private" not in messages_of(add(page, "http://nas.home.arpa/feed"))


# --- refused -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sent", "said"),
    [
        ("", "Paste the address of the podcast&#x27;s feed."),
        ("   ", "Paste the address of the podcast&#x27;s feed."),
        ("ftp://example.com/feed.xml", "“ftp:” addresses cannot be feeds"),
        ("mailto:someone@example.com", "“mailto:” addresses cannot be feeds"),
        ("javascript:alert(1)", "“javascript:” addresses cannot be feeds"),
        ("file:///etc/passwd", "“file:” addresses cannot be feeds"),
        ("https:/example.com/feed", "“https:” must be followed by “//”"),
        ("https://exa mple.com/feed", "holds spaces, line breaks or other characters"),
        ("https://example.com/\u2028feed", "holds spaces, line breaks or other characters"),
        ("https://example.com/feed\ufffe", "holds spaces, line breaks or other characters"),
        ("https://", "names no server"),
        ("https://:80/feed", "names no server"),
        ("https://example.com:99999/feed", "This address cannot be read (Port out of range"),
        ("https://example.com:0/feed", "This address cannot be read (port 0)"),
        ("https://[::1/feed", "This address cannot be read (Invalid IPv6 URL)"),
        ("feed://https://example.com/feed", "has a scheme where its server should be"),
        ("\x00https://example.com/feed", "Null characters are not allowed."),
    ],
)
def test_an_address_that_cannot_be_a_feed_is_refused_in_words_and_nothing_is_added(
    page: Client, person: Any, sent: str, said: str
) -> None:
    response = page.post(ADD, {"url": sent})
    assert response.status_code == 400
    assert any(said in error for error in errors(response)), errors(response)
    assert nothing_stored()
    # The list is shown under the form, which keeps what was typed to correct it.
    assert 'aria-invalid="true"' in shown(response)


def test_the_length_limit_is_named_and_an_address_at_the_limit_is_added(
    page: Client, person: Any
) -> None:
    at_limit = "https://example.com/" + "a" * (2048 - len("https://example.com/"))
    over = at_limit + "b"
    response = page.post(ADD, {"url": over})
    assert response.status_code == 400
    assert errors(response) == [
        "This address is longer than 2,048 characters, the most a feed&#x27;s address has."
    ]
    assert nothing_stored()
    # Without a scheme, the http:// it is read with counts too.
    response = page.post(ADD, {"url": "example.com/" + "a" * 2036})
    assert errors(response) == [
        "Read as http://example.com/a…, this address is 2,055 characters long: a feed&#x27;s "
        "address has at most 2,048."
    ]
    assert nothing_stored()

    assert add(page, at_limit).status_code == 200
    assert Subscription.objects.get(user=person).feed_url == at_limit


def test_the_field_lets_a_paste_through_one_character_over_the_limit(page: Client) -> None:
    """A browser cuts a paste at the field's maxlength: at the limit itself, a longer address
    would arrive cut into another one, and be added silently."""
    assert 'maxlength="2049"' in shown(page.get("/podcasts/"))


def test_a_10_mb_paste_is_answered_413_naming_the_limit_before_it_is_read(
    page: Client, settings: Any
) -> None:
    response = page.post(ADD, {"url": "https://example.com/" + "a" * 10_000_000})
    assert response.status_code == 413
    text = response.content.decode()
    assert f"the limit is {settings.MAX_PAGE_BODY_BYTES} bytes (MAX_PAGE_BODY_BYTES)" in text
    assert nothing_stored()


def test_hostile_bodies_are_refused_without_a_500(page: Client, person: Any) -> None:
    for content_type, bodies in FORMS.items():
        for body in bodies:
            response = page.post(ADD, body, content_type=content_type)
            assert response.status_code < 500, (content_type, body[:60])
            page.force_login(person)
    assert nothing_stored()


def test_adding_needs_a_signed_in_person_and_the_csrf_token(client: Client, person: Any) -> None:
    response = client.post(ADD, {"url": "https://example.com/feed"})
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")
    guarded = Client(enforce_csrf_checks=True)
    guarded.force_login(person)
    assert guarded.post(ADD, {"url": "https://example.com/feed"}).status_code == 403
    assert nothing_stored()


def test_the_add_address_sends_a_get_on_to_the_list(page: Client) -> None:
    """A refused form shows the list at /podcasts/add/: its page links and unsubscribe's way
    back lead there, and go on to the list."""
    assert page.get(ADD)["Location"] == "/podcasts/"
    assert page.get(ADD + "?page=2&status=all")["Location"] == "/podcasts/?page=2&status=all"


def test_an_add_costs_the_same_queries_with_1_and_with_60_podcasts(
    page: Client, person: Any, django_assert_max_num_queries: Any
) -> None:
    page.get("/podcasts/")
    subscribe(person, "https://example.com/0")
    with django_assert_max_num_queries(16) as few:
        page.post(ADD, {"url": "https://example.com/1"})
    for n in range(2, 62):
        subscribe(person, f"https://example.com/{n}")
    with django_assert_max_num_queries(len(few.captured_queries)):
        page.post(ADD, {"url": "https://example.com/new"})
    with django_assert_max_num_queries(len(few.captured_queries)):
        page.post(ADD, {"url": "https://example.com/new"})  # already followed


def test_another_persons_podcast_is_theirs_alone(page: Client, person: Any, stranger: Any) -> None:
    theirs = subscribe(stranger, "https://example.com/feed")
    response = add(page, "https://example.com/feed")
    assert "Added" in messages_of(response)
    mine = Subscription.objects.get(user=person)
    assert mine.pk != theirs.pk
    theirs.refresh_from_db()
    assert theirs.subscription_changed == theirs.created


# --- the list: its default filter and its empty state -------------------------------------------


def test_the_list_shows_subscribed_podcasts_by_default_and_the_others_on_request(
    page: Client, person: Any, django_capture_on_commit_callbacks: Any
) -> None:
    subscribe(person, "https://a.example/followed")
    dropped = subscribe(person, "https://b.example/dropped")
    page.post(f"/podcasts/{dropped.guid}/subscription/", {})
    gone = subscribe(person, "https://c.example/gone")
    with django_capture_on_commit_callbacks(execute=True):
        page.post(f"/podcasts/{gone.guid}/delete/")

    def listed(query: str) -> set[str]:
        body = shown(page.get(f"/podcasts/{query}")).split('id="status"')[-1]
        return {host for host in ("a.example", "b.example", "c.example") if host in body}

    assert listed("") == {"a.example"}
    assert listed("?status=") == {"a.example"}
    assert listed("?status=subscribed") == {"a.example"}
    assert listed("?status=unsubscribed") == {"b.example"}
    assert listed("?status=not-deleted") == {"a.example", "b.example"}
    assert listed("?status=deleted") == {"c.example"}
    assert listed("?status=all") == {"a.example", "b.example", "c.example"}
    body = shown(page.get("/podcasts/"))
    assert '<option value="subscribed" selected>Subscribed</option>' in body


def test_an_account_without_podcasts_has_the_add_form_and_no_filters(page: Client) -> None:
    body = shown(page.get("/podcasts/"))
    assert 'action="/podcasts/add/"' in body
    assert 'role="search"' not in body
    assert 'name="status"' not in body
    assert "No podcasts yet" in body


def test_an_empty_result_keeps_the_filters_to_change_it(page: Client, person: Any) -> None:
    sub = subscribe(person, "https://a.example/feed")
    body = shown(page.get("/podcasts/?q=nothing-like-it"))
    assert 'role="search"' in body
    assert "Nothing matches." in body
    # Only unsubscribed podcasts: the default list is empty, and says where the others are.
    page.post(f"/podcasts/{sub.guid}/subscription/", {})
    body = shown(page.get("/podcasts/"))
    assert 'role="search"' in body
    assert "you follow none of your podcasts now" in body


def test_a_refused_add_keeps_the_list_and_its_ways_back(page: Client, person: Any) -> None:
    sub = subscribe(person, "https://a.example/feed")
    response = page.post(ADD, {"url": "ftp://x"})
    body = shown(response)
    assert f'href="/podcasts/{sub.guid}/"' in body
    assert 'value="ftp://x"' in body


def test_the_list_is_a_constant_number_of_queries_empty_or_not(
    page: Client, person: Any, django_assert_max_num_queries: Any
) -> None:
    page.get("/podcasts/")
    with django_assert_max_num_queries(6):
        page.get("/podcasts/")
    subscribe(person, "https://a.example/feed")
    with django_assert_max_num_queries(6):
        page.get(f"/podcasts/?added={Subscription.objects.get().guid}")
