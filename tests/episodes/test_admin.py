"""Staff see a user's recent episode actions, newest first, search them by podcast URL, and
change none of them."""

import html
import json
import re
from typing import Any

from django.test import Client

from episodes.models import EpisodeAction
from tests.factories import UserFactory
from tests.helpers import basic


def test_staff_find_a_users_recent_actions_by_podcast_url(app, alice, bob):
    app.post(
        "/api/2/episodes/alice.json",
        json.dumps(
            [
                {
                    "podcast": "https://feeds.example.com/ünï.xml",
                    "episode": "https://cdn.example.com/1.mp3",
                    "action": "play",
                    "position": 42,
                    "device": "phone",
                },
                {
                    "podcast": "https://other.example.com/f",
                    "episode": "https://cdn.example.com/other-episode.mp3",
                    "action": "new",
                },
            ]
        ),
        content_type="application/json",
    )
    Client().post(
        "/api/2/episodes/bob.json",
        json.dumps([{"podcast": "https://feeds.example.com/bob", "episode": "b", "action": "new"}]),
        content_type="application/json",
        HTTP_AUTHORIZATION=basic("bob"),
    )
    staff: Any = UserFactory(is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(staff)

    found = client.get("/admin/episodes/episodeaction/", {"q": "feeds.example.com/ünï"})
    assert found.status_code == 200
    page = found.content.decode()
    assert "https://cdn.example.com/1.mp3" in page
    # The other podcast's action is not listed (a name this long appears in no token).
    assert "other-episode.mp3" not in page
    mine = client.get("/admin/episodes/episodeaction/", {"q": "alice"}).content.decode()
    assert "https://cdn.example.com/1.mp3" in mine
    assert "feeds.example.com/bob" not in mine

    action = EpisodeAction.objects.get(position=42)
    detail = client.get(f"/admin/episodes/episodeaction/{action.pk}/change/")
    assert detail.status_code == 200
    assert "phone" in detail.content.decode()
    assert client.get("/admin/episodes/episodeaction/add/").status_code == 403
    client.post(f"/admin/episodes/episodeaction/{action.pk}/change/", {"position": "1"})
    action.refresh_from_db()
    assert action.position == 42
    assert client.get(f"/admin/episodes/episodeaction/{action.pk}/delete/").status_code == 403
    client.post(
        "/admin/episodes/episodeaction/",
        {"action": "delete_selected", "_selected_action": [action.pk], "post": "yes"},
    )
    assert EpisodeAction.objects.filter(pk=action.pk).exists()


def test_the_list_is_one_short_line_per_action(app, alice):
    """Six short columns: the episode by its title when known, long URLs cut in the middle,
    each whole in the cell's title; a play's position as a player shows it."""
    long_episode = "https://cdn.example.com/" + "very-long-path/" * 10 + "episode-042.mp3"
    long_podcast = "https://feeds.example.com/" + "deep/" * 20 + "feed.xml"
    app.post(
        "/api/2/episodes/alice.json",
        json.dumps(
            [
                {
                    "podcast": long_podcast,
                    "episode": long_episode,
                    "action": "play",
                    "started": 0,
                    "position": 3723,
                    "total": 4000,
                    "device": "phone",
                },
                {
                    "podcast": "https://short.example/f",
                    "episode": "https://s.example/1.mp3",
                    "action": "play",
                    "started": 0,
                    "position": 75,
                    "total": 100,
                },
                {"podcast": "https://short.example/f", "episode": "e<b>ü</b>", "action": "new"},
            ]
        ),
        content_type="application/json",
    )
    staff: Any = UserFactory(is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(staff)

    response = client.get("/admin/episodes/episodeaction/")
    body = response.content.decode()

    headers = re.findall(r'<th scope="col" class="[^"]*column-(\w+)', body)
    assert headers == ["when", "user", "device", "action_shown", "episode_shown", "podcast_shown"]
    cells = re.findall(r'<span class="nowrap" title="([^"]*)">([^<]*)</span>', body)
    shown = {html.unescape(title): html.unescape(text) for title, text in cells}
    assert shown[long_episode] == "cdn.example.com/ver…sode-042.mp3"
    assert len(shown[long_podcast]) == 24
    assert shown[long_podcast].startswith("feeds.example")
    assert shown[long_podcast].endswith("feed.xml")
    assert shown["https://s.example/1.mp3"] == "s.example/1.mp3"
    assert shown["e<b>ü</b>"] == "e<b>ü</b>"  # text, escaped in the page
    assert "e<b>ü</b>" not in body
    assert '<span class="nowrap">play 1:02:03</span>' in body
    assert '<span class="nowrap">play 1:15</span>' in body
    assert '<td class="field-action_shown">new</td>' in body
    assert re.search(r'<span class="nowrap">\d{4}-\d\d-\d\d \d\d:\d\d</span>', body)
