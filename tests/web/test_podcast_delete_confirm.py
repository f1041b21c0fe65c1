"""Deleting a podcast asks first (docs/web.md, "Podcasts"): the confirmation names the podcast and
the episode actions that go with it, for good, and offers Unsubscribe as the lighter choice."""

import re
import uuid
from typing import Any

import pytest
from django.test import Client

from deletions.models import Deletion
from episodes.models import EpisodeAction
from feedchecks.models import FeedCheck
from subscriptions import feeds
from subscriptions.models import Subscription
from subscriptions.services import SubscriptionUpdate, subscription_update
from tests.episodes.helpers import upload_actions
from tests.helpers import subscribe


def confirm_path(sub: Any) -> str:
    return f"/podcasts/{sub.guid}/delete/"


def played(user: Any, podcast: str, count: int, first: int = 0) -> None:
    upload_actions(
        user,
        [
            {"podcast": podcast, "episode": f"https://cdn.example/{n}.mp3", "action": "download"}
            for n in range(first, first + count)
        ],
    )


def titled(url: str, title: str) -> None:
    FeedCheck.objects.create(key_digest=feeds.feed_key_digest(url), url=url, title=title)


def main_of(response: Any) -> str:
    body = response.content.decode()
    return body[body.index('<main id="main">') : body.index("</main>")]


def test_the_podcast_page_leads_to_the_confirmation_instead_of_deleting(
    page: Client, person: Any
) -> None:
    sub = subscribe(person, "https://a.example/news.xml")
    body = page.get(f"/podcasts/{sub.guid}/").content.decode()
    assert f'<a class="button danger" href="{confirm_path(sub)}">Delete…</a>' in body
    assert f'action="{confirm_path(sub)}"' not in body  # no form deletes from here


def test_the_confirmation_names_the_podcast_its_episode_actions_and_that_it_is_for_good(
    page: Client, person: Any, stranger: Any
) -> None:
    sub = subscribe(person, "https://a.example/news.xml")
    titled(sub.feed_url, "Morning <News> & Café")
    played(person, "https://a.example/news.xml", 3)
    played(person, "HTTPS://A.example/news.xml/", 1, first=3)  # another spelling of the feed
    played(person, "https://other.example/feed", 5)  # another podcast's
    subscribe(stranger, "https://a.example/news.xml")
    played(stranger, "https://a.example/news.xml", 7)  # someone else's

    response = page.get(confirm_path(sub))
    assert response.status_code == 200
    main = main_of(response)
    assert "Delete this podcast?" in main
    assert "Morning &lt;News&gt; &amp; Café" in main
    assert "https://a.example/news.xml" in main
    assert "<strong>4 episode actions</strong>" in main
    assert "for good" in main
    assert "This cannot be undone." in main
    # Delete posts to this address; Unsubscribe to the subscription's, as the lighter choice.
    assert re.search(
        rf'<form method="post" action="{confirm_path(sub)}">\s*<input type="hidden" '
        r'name="csrfmiddlewaretoken"[^>]*>\s*<button type="submit" class="danger">'
        r"Delete it and its 4 episode actions</button>",
        main,
    )
    assert f'action="/podcasts/{sub.guid}/subscription/"' in main
    assert "Unsubscribe instead" in main
    assert "Unsubscribing is the lighter choice" in main
    # Nothing was deleted by looking.
    assert EpisodeAction.objects.filter(user=person).count() == 9
    assert not Deletion.objects.exists()


def test_an_untitled_podcast_is_named_by_its_url_and_one_action_is_singular(
    page: Client, person: Any
) -> None:
    sub = subscribe(person, "https://untitled.example/feed")
    played(person, sub.feed_url, 1)
    main = main_of(page.get(confirm_path(sub)))
    assert '<p class="name">https://untitled.example/feed</p>' in main
    assert "<strong>1 episode action</strong>" in main
    assert "<strong>0 episode" not in main


def test_a_podcast_without_listening_history_says_so_instead_of_counting_none(
    page: Client, person: Any
) -> None:
    sub = subscribe(person, "https://quiet.example/feed")
    played(person, "https://other.example/feed", 2)  # another podcast's
    main = main_of(page.get(confirm_path(sub)))
    assert "no listening history: your apps have told of none of its episodes" in main
    assert "0 episode" not in main
    assert "without that history" not in main
    assert "with its listening history" not in main
    assert re.search(r'<button type="submit" class="danger">Delete it</button>', main)
    assert "Unsubscribe instead" in main


def test_actions_under_the_feed_s_earlier_url_are_counted(page: Client, person: Any) -> None:
    sub = subscribe(person, "https://old.example/feed")
    played(person, "https://old.example/feed", 2)
    subscription_update(
        user=person, guid=sub.guid, change=SubscriptionUpdate(new_feed_url="https://new.example/f")
    )
    played(person, "https://new.example/f", 1, first=2)
    assert "<strong>3 episode actions</strong>" in main_of(page.get(confirm_path(sub)))


def test_deleting_through_the_confirmation_deletes_what_it_named(
    page: Client, person: Any, django_capture_on_commit_callbacks: Any
) -> None:
    sub = subscribe(person, "https://a.example/news.xml")
    played(person, sub.feed_url, 2)
    played(person, "https://kept.example/feed", 1)
    assert "2 episode actions" in main_of(page.get(confirm_path(sub)))
    with django_capture_on_commit_callbacks(execute=True):
        response = page.post(confirm_path(sub))
    deletion = Deletion.objects.get(subscription=sub)
    assert response["Location"] == f"/deletions/{deletion.pk}/"
    sub.refresh_from_db()
    assert sub.deleted is not None
    assert list(EpisodeAction.objects.filter(user=person).values_list("podcast", flat=True)) == [
        "https://kept.example/feed"
    ]


def test_unsubscribe_from_the_confirmation_keeps_everything(page: Client, person: Any) -> None:
    sub = subscribe(person, "https://a.example/news.xml")
    played(person, sub.feed_url, 2)
    response = page.post(f"/podcasts/{sub.guid}/subscription/", {}, follow=True)
    assert response.redirect_chain == [(f"/podcasts/{sub.guid}/", 302)]
    sub.refresh_from_db()
    assert sub.is_subscribed is False
    assert sub.deleted is None
    assert EpisodeAction.objects.filter(user=person).count() == 2
    assert not Deletion.objects.exists()


def test_an_unsubscribed_podcast_is_offered_no_unsubscribe(page: Client, person: Any) -> None:
    sub = subscribe(person, "https://a.example/news.xml")
    page.post(f"/podcasts/{sub.guid}/subscription/", {})
    main = main_of(page.get(confirm_path(sub)))
    assert "Unsubscribe instead" not in main
    assert "You are unsubscribed from it already" in main
    assert re.search(r'<button type="submit" class="danger">Delete it</button>', main)


def test_an_earlier_guid_reaches_the_confirmation_whose_forms_use_the_current_one(
    page: Client, person: Any
) -> None:
    sub = subscribe(person, "https://a.example/news.xml")
    earlier = sub.guid
    new = uuid.uuid4()
    subscription_update(user=person, guid=earlier, change=SubscriptionUpdate(new_guid=new))
    main = main_of(page.get(f"/podcasts/{earlier}/delete/"))
    assert f'action="/podcasts/{new}/delete/"' in main


def test_a_deleted_podcast_says_so_and_one_being_deleted_leads_to_its_deletion(
    page: Client, person: Any, django_capture_on_commit_callbacks: Any
) -> None:
    gone = subscribe(person, "https://gone.example/feed")
    with django_capture_on_commit_callbacks(execute=True):
        page.post(confirm_path(gone))
    response = page.get(confirm_path(gone), follow=True)
    assert response.redirect_chain == [(f"/podcasts/{gone.guid}/", 302)]
    assert "This subscription is deleted already." in response.content.decode()

    going = subscribe(person, "https://going.example/feed")
    deletion = Deletion.objects.create(
        user=person, subscription=going, guid=going.guid, requested=going.subscription_changed
    )
    response = page.get(confirm_path(going), follow=True)
    assert response.redirect_chain == [(f"/deletions/{deletion.pk}/", 302)]
    assert "This subscription is being deleted already." in response.content.decode()


def test_another_persons_podcast_or_an_unknown_guid_is_not_found(
    page: Client, person: Any, stranger: Any
) -> None:
    theirs = subscribe(stranger, "https://theirs.example/feed")
    played(stranger, theirs.feed_url, 2)
    for response in (
        page.get(confirm_path(theirs)),
        page.post(confirm_path(theirs)),
        page.get(f"/podcasts/{uuid.uuid4()}/delete/"),
        page.post(f"/podcasts/{uuid.uuid4()}/delete/"),
    ):
        assert response.status_code == 404
    theirs.refresh_from_db()
    assert theirs.is_subscribed
    assert theirs.deleted is None
    assert not Deletion.objects.exists()
    assert page.get("/podcasts/not-a-guid/delete/").status_code == 404
    assert page.put(confirm_path(theirs)).status_code == 405


def test_the_confirmation_asks_a_stranger_to_sign_in(client: Client, person: Any) -> None:
    sub = subscribe(person, "https://a.example/news.xml")
    response = client.get(confirm_path(sub))
    assert response.status_code == 302
    assert response["Location"] == f"/login/?next={confirm_path(sub)}"


def test_the_confirmation_is_a_constant_number_of_queries(
    page: Client, person: Any, django_assert_max_num_queries: Any
) -> None:
    sub = subscribe(person, "https://a.example/news.xml")
    page.get(confirm_path(sub))
    played(person, sub.feed_url, 1)
    with django_assert_max_num_queries(5) as few:
        assert page.get(confirm_path(sub)).status_code == 200
    played(person, sub.feed_url, 600, first=1)
    for n in range(30):
        subscribe(person, f"https://more.example/{n}")
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert "601 episode actions" in main_of(page.get(confirm_path(sub)))


def test_the_confirmation_has_no_inline_script_or_style(page: Client, person: Any) -> None:
    sub = subscribe(person, "https://a.example/news.xml")
    response = page.get(confirm_path(sub))
    body = response.content.decode()
    assert "frame-ancestors 'none'" in response["Content-Security-Policy"]
    assert re.search(r"<script(?![^>]*\bsrc=)", body) is None
    assert " style=" not in body
    assert re.search(r"\son[a-z]+=", body) is None


@pytest.mark.parametrize("subscribed", [True, False])
def test_a_podcast_page_without_javascript_still_reaches_delete_in_two_steps(
    page: Client, person: Any, subscribed: bool, django_capture_on_commit_callbacks: Any
) -> None:
    sub = subscribe(person, "https://a.example/news.xml")
    if not subscribed:
        page.post(f"/podcasts/{sub.guid}/subscription/", {})
    assert confirm_path(sub) in page.get(f"/podcasts/{sub.guid}/").content.decode()
    assert page.get(confirm_path(sub)).status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        assert page.post(confirm_path(sub)).status_code == 302
    assert Subscription.objects.get(pk=sub.pk).deleted is not None


def test_past_a_bound_the_confirmations_say_more_than_instead_of_counting_everything(
    page: Client, person: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A podcast's or a device's 100,000 actions are not all read to say how many go or stay:
    counting stops one past COUNTED_AT_MOST, and the page says "more than"."""
    from web import selectors
    from web.templatetags import web

    for module in (selectors, web):
        monkeypatch.setattr(module, "COUNTED_AT_MOST", 3)
    sub = subscribe(person, "https://a.example/news.xml")
    played(person, "https://a.example/news.xml", 3)
    assert "<strong>3 episode actions</strong>" in main_of(page.get(confirm_path(sub)))
    played(person, "https://a.example/news.xml", 5, first=3)
    assert "<strong>more than 3 episode actions</strong>" in main_of(page.get(confirm_path(sub)))
    upload_actions(
        person,
        [
            {
                "podcast": sub.feed_url,
                "episode": f"https://cdn.example/{n}.mp3",
                "action": "new",
                "device": "phone",
            }
            for n in range(4)
        ],
    )
    shown = main_of(page.get("/devices/phone/remove/"))
    assert "<strong>more than 3 episode actions</strong>" in shown
