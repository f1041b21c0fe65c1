"""The listening history reaches every episode with an action (docs/web.md, "Listening history"):
/history/ lists the podcasts, the one played last first, a page at a time, each with how many
episodes it has and its latest; a podcast's own page lists all of its episodes, a page at a
time; each episode once; at the same number of queries for one action and for thousands."""

import html
import re
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.test import Client

from feedchecks.models import FeedCheck, FeedEpisode
from subscriptions import feeds
from subscriptions.services import SubscriptionUpdate, subscription_update
from tests.episodes.helpers import upload_actions
from tests.helpers import subscribe
from web import selectors

SHOW = "https://show.example/feed.xml"
ELSEWHERE = "https://elsewhere.example/never-subscribed.xml"
START = datetime(2024, 1, 1, 8, 0)


def plays(podcast: str, count: int, *, first: int = 0, device: str = "phone") -> list[Any]:
    """A play of each of `count` episodes of `podcast`, episode n at START + n hours."""
    return [
        {
            "podcast": podcast,
            "episode": f"https://cdn.example/{n}.mp3",
            "action": "play",
            "device": device,
            "timestamp": (START + timedelta(hours=n)).isoformat(),
            "started": 0,
            "position": 60,
            "total": 600,
        }
        for n in range(first, first + count)
    ]


def catalogued(url: str, *items: tuple[str, str, str]) -> None:
    """A feed check of `url` found these items: (guid, title, enclosure URL) each."""
    check, _ = FeedCheck.objects.update_or_create(
        key_digest=feeds.feed_key_digest(url), defaults={"url": url, "title": "The Show"}
    )
    for guid, title, enclosure in items:
        FeedEpisode.objects.create(
            feed=check,
            item_key=guid or enclosure,
            guid=guid,
            title=title,
            url=enclosure,
            url_key=feeds.url_key_digest(enclosure),
        )


def main_of(response: Any) -> str:
    assert response.status_code == 200, response.status_code
    body = response.content.decode()
    return body[body.index('<main id="main">') : body.index("</main>")]


def listening_history(response: Any) -> str:
    """The podcast page's listening history, up to the section after it."""
    main = main_of(response)
    return main[main.index('<h2 id="history">') : main.index("<h2>Feed URLs and guids</h2>")]


def episodes_in(part: str) -> list[str]:
    """The episodes a part of a page lists, by name, in order."""
    return [
        html.unescape(name) for name in re.findall(r'<span class="episode">([^<]*)</span>', part)
    ]


def sections(response: Any) -> list[str]:
    """The history page's podcasts, each its section."""
    return main_of(response).split('<section class="history">')[1:]


def words(part: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", part)).split())


def files(numbers: range) -> list[str]:
    return [f"{n}.mp3" for n in numbers]


# --- forty plays of one show ------------------------------------------------------------------


def test_forty_plays_of_one_show_are_all_reachable(page: Client, person: Any) -> None:
    sub = subscribe(person, SHOW)
    upload_actions(person, plays(SHOW, 40))

    [show] = sections(page.get("/history/"))
    assert "40 episodes" in words(show)
    assert episodes_in(show) == files(range(39, 29, -1))  # the latest ten, the latest first
    more = re.search(r'<p class="more"><a href="([^"]+)">(.*?)</a></p>', show)
    assert more is not None, show
    assert more[1] == f"/podcasts/{sub.guid}/#history"
    assert words(more[2]) == "And 30 more episodes of https://show.example/feed.xml"

    first = listening_history(page.get(f"/podcasts/{sub.guid}/"))
    assert "40 episodes your apps told of" in words(first)
    assert episodes_in(first) == files(range(39, 19, -1))
    assert "Page 1 of 2" in first
    assert '<a href="?page=2#history" rel="next">Older</a>' in first
    assert "Newer" not in first

    second = listening_history(page.get(f"/podcasts/{sub.guid}/?page=2"))
    assert episodes_in(second) == files(range(19, -1, -1))
    assert "Page 2 of 2" in second
    assert '<a href="?page=1#history" rel="prev">Newer</a>' in second
    assert "Older" not in second


def test_a_podcast_with_few_episodes_has_no_more_and_no_pages(page: Client, person: Any) -> None:
    sub = subscribe(person, SHOW)
    upload_actions(person, plays(SHOW, 1))
    [show] = sections(page.get("/history/"))
    assert "1 episode" in words(show)
    assert "1 episodes" not in words(show)
    assert "more" not in words(show)
    shown = listening_history(page.get(f"/podcasts/{sub.guid}/"))
    assert "1 episode your apps told of" in words(shown)
    assert 'class="pages"' not in shown


# --- each episode once --------------------------------------------------------------------------


def test_each_episode_is_counted_and_shown_once_however_it_was_named(
    page: Client, person: Any
) -> None:
    """Played on two devices, downloaded before, under the feed's earlier URL, by another
    spelling of its URL, and by its guid under a tracking URL: one episode each time, its latest
    action; the history's count and the podcast page's are the same."""
    old = "https://old.example/feed.xml"
    sub = subscribe(person, old)
    sub = subscription_update(
        user=person, guid=sub.guid, change=SubscriptionUpdate(new_feed_url=SHOW)
    )
    catalogued(SHOW, ("ep-1", "Episode One", "https://cdn.example/1.mp3"))

    def action(podcast: str, episode: str, hour: int, **more: Any) -> dict[str, Any]:
        at = (START + timedelta(hours=hour)).isoformat()
        if more["action"] == "play":
            more.update(started=0, position=60 * hour, total=600)
        return {"podcast": podcast, "episode": episode, "timestamp": at, **more}

    upload_actions(
        person,
        [
            action(old, "https://cdn.example/1.mp3", 1, action="download", device="phone"),
            action(SHOW, "https://cdn.example/1.mp3", 2, action="play", device="phone"),
            action(
                SHOW, "https://track.example/r/1.mp3", 3, action="play", guid="ep-1", device="tv"
            ),
            action(old, "https://cdn.example/2.mp3", 4, action="download", device="phone"),
            action(SHOW, "HTTPS://CDN.example/2.mp3", 5, action="play", device="laptop"),
        ],
    )

    [show] = sections(page.get("/history/"))
    assert "2 episodes" in words(show)
    assert episodes_in(show) == ["2.mp3", "Episode One"]
    assert "on laptop" in show
    assert "on tv" in show
    assert "Downloaded" not in show
    shown = listening_history(page.get(f"/podcasts/{sub.guid}/"))
    assert "2 episodes your apps told of" in words(shown)
    assert episodes_in(shown) == ["2.mp3", "Episode One"]


# --- pages of podcasts --------------------------------------------------------------------------


def test_the_history_pages_through_podcasts_the_one_played_last_first(
    page: Client, person: Any
) -> None:
    for p in range(25):
        subscribe(person, f"https://p{p}.example/feed.xml")
        upload_actions(person, plays(f"https://p{p}.example/feed.xml", 1, first=p))

    def podcasts_on(number: int) -> list[str]:
        found = re.findall(
            r"https://p(\d+)\.example/feed\.xml</a>", main_of(page.get(f"/history/?page={number}"))
        )
        return [f"p{n}" for n in found]

    first = main_of(page.get("/history/"))
    assert "25 podcasts" in words(first)
    assert "Page 1 of 3" in first
    assert '<a href="?page=2" rel="next">Older</a>' in first
    assert podcasts_on(1) == [f"p{p}" for p in range(24, 14, -1)]
    assert podcasts_on(2) == [f"p{p}" for p in range(14, 4, -1)]
    assert podcasts_on(3) == [f"p{p}" for p in range(4, -1, -1)]
    assert '<a href="?page=2" rel="prev">Newer</a>' in main_of(page.get("/history/?page=3"))

    # However much is played since, the oldest podcast stays on the last page.
    upload_actions(person, plays("https://p24.example/feed.xml", 600, first=100))
    assert podcasts_on(3) == [f"p{p}" for p in range(4, -1, -1)]
    [latest, *_] = sections(page.get("/history/"))
    assert "601 episodes" in words(latest)
    assert "And 591 more episodes" in words(latest)


def test_a_podcast_played_again_comes_first_again(page: Client, person: Any) -> None:
    for p in range(3):
        subscribe(person, f"https://p{p}.example/feed.xml")
        upload_actions(person, plays(f"https://p{p}.example/feed.xml", 1, first=p))
    upload_actions(person, plays("https://p0.example/feed.xml", 1, first=10))
    found = re.findall(r"https://(p\d)\.example/feed\.xml</a>", main_of(page.get("/history/")))
    assert found == ["p0", "p2", "p1"]


# --- a podcast without a subscription ----------------------------------------------------------


def test_a_podcast_never_subscribed_to_has_its_history_on_a_page_of_its_own(
    page: Client, person: Any
) -> None:
    upload_actions(person, plays(ELSEWHERE, 25))
    key = feeds.feed_key_digest(ELSEWHERE)

    [shown] = sections(page.get("/history/"))
    assert ELSEWHERE in shown
    assert "25 episodes" in words(shown)
    assert f'<a href="/history/feeds/{key}/">And 15 more episodes' in shown

    first = main_of(page.get(f"/history/feeds/{key}/"))
    assert ELSEWHERE in first
    assert "You do not subscribe to this podcast" in first
    assert "25 episodes" in words(first)
    assert episodes_in(first) == files(range(24, 4, -1))
    assert '<a href="?page=2" rel="next">Older</a>' in first
    assert episodes_in(main_of(page.get(f"/history/feeds/{key}/?page=2"))) == files(
        range(4, -1, -1)
    )

    # Subscribed since: its history is on the subscription's page.
    sub = subscribe(person, ELSEWHERE)
    response = page.get(f"/history/feeds/{key}/")
    assert response.status_code == 302
    assert response["Location"] == f"/podcasts/{sub.guid}/#history"
    [shown] = sections(page.get("/history/"))
    assert f'href="/podcasts/{sub.guid}/#history"' in shown


def test_a_feed_history_nobody_has_or_another_persons_is_not_found(
    page: Client, person: Any, stranger: Any
) -> None:
    upload_actions(stranger, plays(ELSEWHERE, 3))
    theirs = feeds.feed_key_digest(ELSEWHERE)
    nobody = feeds.feed_key_digest("https://nobody.example/feed.xml")
    for path in (
        f"/history/feeds/{theirs}/",
        f"/history/feeds/{theirs}/?page=2",
        f"/history/feeds/{nobody}/",
        f"/history/feeds/{theirs.upper()}/",
        f"/history/feeds/{theirs[:-1]}/",
        f"/history/feeds/{theirs}0/",
        "/history/feeds/%00/",
        "/history/feeds/../",
    ):
        assert page.get(path).status_code == 404, path


def test_another_persons_podcast_stays_a_404_on_every_page(
    page: Client, person: Any, stranger: Any
) -> None:
    theirs = subscribe(stranger, SHOW)
    upload_actions(stranger, plays(SHOW, 30))
    for query in ("", "?page=2", "?page=abc"):
        assert page.get(f"/podcasts/{theirs.guid}/{query}").status_code == 404
    assert "No app has told of an episode yet" in main_of(page.get("/history/"))


# --- what is asked of it -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("asked", "shown"),
    [
        ("0", "Page 2 of 2"),
        ("-1", "Page 2 of 2"),
        ("abc", "Page 1 of 2"),
        ("", "Page 1 of 2"),
        ("1.5", "Page 1 of 2"),
        ("2.0", "Page 1 of 2"),
        ("9" * 40, "Page 2 of 2"),
        ("\x00", "Page 1 of 2"),
        ("1\x002", "Page 1 of 2"),
        ("\uff12", "Page 2 of 2"),  # a full-width digit is a digit to int()
    ],
)
def test_any_page_asked_for_is_the_first_or_the_last(
    page: Client, person: Any, asked: str, shown: str
) -> None:
    sub = subscribe(person, SHOW)
    upload_actions(person, plays(SHOW, 25))
    for p in range(1, 11):
        upload_actions(person, plays(f"https://p{p}.example/feed.xml", 1))
    key = feeds.feed_key_digest("https://p1.example/feed.xml")
    upload_actions(person, plays("https://p1.example/feed.xml", 30, first=5))
    for path in ("/history/", f"/podcasts/{sub.guid}/", f"/history/feeds/{key}/"):
        response = page.get(path, {"page": asked})
        assert response.status_code == 200, (path, asked)
        assert shown in response.content.decode(), (path, asked)


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_the_history_pages_only_answer_get(page: Client, person: Any, method: str) -> None:
    upload_actions(person, plays(ELSEWHERE, 1))
    key = feeds.feed_key_digest(ELSEWHERE)
    for path in ("/history/", f"/history/feeds/{key}/"):
        assert getattr(page, method)(path).status_code == 405, path


def test_the_history_asks_a_stranger_to_sign_in(client: Client, person: Any) -> None:
    upload_actions(person, plays(ELSEWHERE, 1))
    key = feeds.feed_key_digest(ELSEWHERE)
    response = client.get(f"/history/feeds/{key}/")
    assert response.status_code == 302
    assert response["Location"] == f"/login/?next=/history/feeds/{key}/"


def test_an_empty_history_says_so_and_leads_to_connecting_an_app(page: Client, person: Any) -> None:
    main = main_of(page.get("/history/"))
    assert "No app has told of an episode yet" in main
    assert '<a href="/connect/">Connect an app</a>' in main
    assert 'class="pages"' not in main
    assert 'class="count"' not in main


# --- the cost ------------------------------------------------------------------------------------


def test_the_history_costs_the_same_for_one_action_and_for_thousands(
    page: Client, person: Any, django_assert_max_num_queries: Any
) -> None:
    page.get("/history/")  # the session and the user are read the same way every time
    subscribe(person, SHOW)
    catalogued(SHOW, ("ep-0", "Episode Zero", "https://cdn.example/0.mp3"))
    upload_actions(person, plays(SHOW, 1))
    upload_actions(person, plays(ELSEWHERE, 1))
    with django_assert_max_num_queries(9) as few:
        assert "Episode Zero" in main_of(page.get("/history/"))

    for p in range(30):
        url = f"https://p{p}.example/feed.xml"
        if p % 2:
            subscribe(person, url)
        upload_actions(
            person,
            [
                {**action, "device": f"device-{n % 4}"}
                for n, action in enumerate(plays(url, 100, first=p * 100))
            ],
        )
    # The second page holds subscribed podcasts and others, one episode named from its feed.
    catalogued("https://p15.example/feed.xml", ("", "Episode 1595", "https://cdn.example/1595.mp3"))
    with django_assert_max_num_queries(len(few.captured_queries)):
        response = page.get("/history/?page=2")
    assert "32 podcasts" in words(main_of(response))
    assert "Episode 1595" in main_of(response)
    assert len(sections(response)) == selectors.HISTORY_PODCASTS_PER_PAGE


def test_a_podcast_page_costs_the_same_for_one_action_and_for_thousands(
    page: Client, person: Any, django_assert_max_num_queries: Any
) -> None:
    sub = subscribe(person, SHOW)
    catalogued(SHOW, ("ep-0", "Episode Zero", "https://cdn.example/0.mp3"))
    page.get(f"/podcasts/{sub.guid}/")
    upload_actions(person, plays(SHOW, 1))
    with django_assert_max_num_queries(20) as few:
        assert "Episode Zero" in listening_history(page.get(f"/podcasts/{sub.guid}/"))

    upload_actions(
        person,
        [
            {**action, "device": f"device-{n % 4}"}
            for n, action in enumerate(plays(SHOW, 3000, first=1))
        ],
    )
    with django_assert_max_num_queries(len(few.captured_queries)):
        shown = listening_history(page.get(f"/podcasts/{sub.guid}/?page=100"))
    assert "3001 episodes" in words(shown)
    assert "Page 100 of 151" in shown
    assert len(episodes_in(shown)) == selectors.PODCAST_HISTORY_PER_PAGE
