"""An account's page in the admin links to its podcasts, devices, history and deletions: each
list filtered by the account, with how many rows it has."""

import hashlib
import re
import uuid
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from core.admin import EstimatedCountPaginator
from deletions.models import AccountDeletion, Deletion
from episodes.models import EpisodeAction
from gpodder.models import Device
from tests.factories import UserFactory
from tests.helpers import subscribe

LISTS = {
    "Podcasts (subscriptions)": "/admin/subscriptions/subscription/",
    "Devices": "/admin/gpodder/device/",
    "History (episode actions)": "/admin/episodes/episodeaction/",
    "Deletions of subscriptions": "/admin/deletions/deletion/",
    "Deletions of the account": "/admin/deletions/accountdeletion/",
}


def rows_of(user: Any, feeds: int, devices: int, actions: int, deletions: int) -> None:
    now = timezone.now()
    batch = uuid.uuid4().hex[:8]  # the rows of another call are other rows
    for n in range(feeds):
        subscribe(user, f"https://feeds.example/{user.username}/{batch}/{n}.xml")
    for n in range(devices):
        Device.objects.create(user=user, device_id=f"{batch}-{n}", created=now, last_used=now)
    for n in range(actions):
        EpisodeAction.objects.create(
            user=user,
            podcast="https://feeds.example/x.xml",
            podcast_key="k" * 64,
            episode=f"https://media.example/{batch}/{n}.mp3",
            action="new",
            timestamp=now,
            received=now,
            identity=hashlib.sha256(f"{user.pk} {batch} {n}".encode()).hexdigest(),
        )
    for _ in range(deletions):
        Deletion.objects.create(user=user, guid=uuid.uuid4(), status="FAILURE", requested=now)


@pytest.fixture
def alice(db: None) -> Any:
    alice: Any = UserFactory(username="alice")
    rows_of(alice, feeds=3, devices=2, actions=4, deletions=1)
    AccountDeletion.objects.create(
        user=alice, username="alice", status="FAILURE", requested=timezone.now()
    )
    bob: Any = UserFactory(username="bob")  # rows that are not alice's
    rows_of(bob, feeds=2, devices=1, actions=5, deletions=2)
    return alice


def links(body: str) -> dict[str, tuple[str, str]]:
    """The page's links to the account's data: label -> (address, count)."""
    block = body[body.index('<ul class="their-data">') :]
    block = block[: block.index("</ul>")]
    found = re.findall(r'<li><a href="([^"]+)">([^<]+)</a>: ([^<]+)</li>', block)
    return {label: (href.replace("&amp;", "&"), count) for href, label, count in found}


def test_the_user_page_links_to_each_list_of_the_account_with_its_count(admin_client, alice):
    body = admin_client.get(f"/admin/auth/user/{alice.pk}/change/").content.decode()

    shown = links(body)
    assert shown == {
        label: (f"{url}?user__id__exact={alice.pk}", count)
        for (label, url), count in zip(LISTS.items(), ["3", "2", "4", "1", "1"], strict=True)
    }
    # Each link lists that account's rows, as many as it said.
    for label, (href, count) in shown.items():
        response = admin_client.get(href)
        assert response.status_code == 200, (label, response.status_code)
        rows = response.context["cl"].result_list
        assert len(rows) == int(count), label
        assert {getattr(row, "user_id", None) for row in rows} == {alice.pk}, label


def test_an_account_with_nothing_shows_zeros(admin_client, db):
    carol: Any = UserFactory(username="carol")
    body = admin_client.get(f"/admin/auth/user/{carol.pk}/change/").content.decode()
    assert [count for _, count in links(body).values()] == ["0"] * 5


def test_counts_past_the_cap_say_so(admin_client, alice, monkeypatch):
    monkeypatch.setattr(EstimatedCountPaginator, "COUNT_CAP", 2)
    body = admin_client.get(f"/admin/auth/user/{alice.pk}/change/").content.decode()
    counts = {label: count for label, (_, count) in links(body).items()}
    assert counts["Podcasts (subscriptions)"] == "more than 2"
    assert counts["History (episode actions)"] == "more than 2"
    assert counts["Devices"] == "2"


def test_the_user_page_reads_in_a_bounded_number_of_queries(
    admin_client, alice, django_assert_max_num_queries
):
    url = f"/admin/auth/user/{alice.pk}/change/"
    admin_client.get(url)
    with django_assert_max_num_queries(14):
        assert admin_client.get(url).status_code == 200
    rows_of(alice, feeds=20, devices=5, actions=50, deletions=10)
    with django_assert_max_num_queries(14):
        assert admin_client.get(url).status_code == 200


def test_the_add_form_has_no_links(admin_client):
    response = admin_client.get("/admin/auth/user/add/")
    assert response.status_code == 200
    assert "their-data" not in response.content.decode()


def test_a_missing_account_is_the_admin_s_answer(admin_client):
    response = admin_client.get("/admin/auth/user/987654/change/")
    assert response.status_code == 302  # to the index, with "doesn't exist"
    assert Client().get("/admin/auth/user/1/change/").status_code == 302  # to sign in
