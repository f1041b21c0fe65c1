"""Staff see a user's recent episode actions, newest first, search them by podcast URL, and
change none of them."""

import json
from typing import Any

from django.test import Client

from episodes.models import EpisodeAction
from tests.factories import UserFactory
from tests.gpodder.conftest import basic


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
                {"podcast": "https://other.example.com/f", "episode": "e2", "action": "new"},
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
    assert "e2" not in page
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
