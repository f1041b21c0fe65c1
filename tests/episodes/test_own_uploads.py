"""An app is not sent back the episode actions it uploaded itself (docs/gpodder-api.md, "Episode
actions: an app's own uploads"): the upload's cookie names the rows it added, and the same app's
next download leaves them out. Everything else comes as before: another app's uploads, in the
same second too, a download from 0, a filtered or aggregated one, and an app that keeps no
cookie."""

from typing import Any

import pytest
from django.core import signing
from django.db import connection
from rest_framework.test import APIClient

from episodes import uploaded
from episodes.models import EpisodeAction
from tests.episodes.test_api import download, other_app, play, upload

COOKIE = uploaded.COOKIE


def episodes(answer: dict[str, Any]) -> list[str]:
    return [a["episode"].rsplit("/", 1)[-1] for a in answer["actions"]]


def test_an_app_is_not_sent_its_own_uploads_and_gets_another_apps_of_the_same_second(app, alice):
    first = download(app)
    mine = upload(app, [play(1, device="pixel")])
    upload(other_app(), [play(2, device="laptop")])  # the same second

    # AntennaPod sends back the upload's timestamp, Kasts it plus one; another look at the
    # download's timestamp finds the same.
    for since in (mine["timestamp"], mine["timestamp"] + 1, first["timestamp"]):
        assert episodes(download(app, since=since)) == ["2.mp3"]


def test_the_other_app_gets_the_first_apps_uploads(app, alice):
    phone = other_app()
    first = download(phone)
    upload(app, [play(1)])
    upload(phone, [play(2)])
    assert episodes(download(phone, since=first["timestamp"])) == ["1.mp3"]


def test_a_download_from_0_a_look_aside_and_an_aggregated_one_send_the_apps_own(app, alice):
    answer = upload(app, [play(1, device="pixel")])
    since = answer["timestamp"]

    assert episodes(download(app, since=0)) == ["1.mp3"]
    assert episodes(download(app, since=since, device="pixel")) == ["1.mp3"]
    assert episodes(download(app, since=since, podcast=play()["podcast"])) == ["1.mp3"]
    assert episodes(download(app, since=since, aggregated="true")) == ["1.mp3"]
    # None of those moved the cookie: the app's own stream still leaves it out.
    assert episodes(download(app, since=since)) == []


def test_an_app_that_keeps_no_cookie_gets_its_uploads_back(app, alice):
    answer = upload(app, [play(1)])
    app.cookies.clear()
    assert episodes(download(app, since=answer["timestamp"])) == ["1.mp3"]


def test_a_cookie_that_does_not_verify_or_is_another_accounts_is_ignored(app, alice, bob):
    answer = upload(app, [play(1)])
    value = app.cookies[COOKIE].value
    for forged in (
        value[:-1] + ("A" if value[-1] != "A" else "B"),  # its signature broken
        signing.Signer(salt=f"episodes.{COOKIE}.{bob.pk}").sign(value.rsplit(":", 1)[0]),
        "",
        "x" * 5000,
    ):
        app.cookies[COOKIE] = forged
        assert episodes(download(app, since=answer["timestamp"])) == ["1.mp3"]


def test_the_cookie_keeps_the_latest_ids_and_the_rest_come_back(app, alice):
    """Past its limit the cookie names the latest uploads only; the others come again, as any
    action did before: leaving out fewer is always safe."""
    count = uploaded.MOST + 100
    answer = upload(app, [play(n) for n in range(count)])

    assert len(app.cookies[COOKIE].value) < 4096
    back = episodes(download(app, since=answer["timestamp"]))
    assert back == [f"{n}.mp3" for n in range(100)]


def test_uploads_between_two_downloads_add_up_and_old_seconds_drop_out(app, alice, clock):
    first = download(app)
    upload(app, [play(1)])
    clock.advance(seconds=1)
    answer = upload(app, [play(2)])
    assert episodes(download(app, since=answer["timestamp"])) == []

    clock.advance(seconds=5)
    later = download(app, since=answer["timestamp"])
    assert later["actions"] == []
    # The seconds before the last answer can come no more: the cookie forgot them.
    assert uploaded.parsed(_unsigned(app, alice)) == {}
    assert first["timestamp"] < later["timestamp"]


def test_an_action_held_already_is_not_named_and_comes_back(app, alice):
    """An upload names only the rows it added: one the service held already may be another
    app's, sent by this one too, and comes again."""
    phone = other_app()
    first = download(app)
    upload(phone, [play(1)])
    upload(app, [play(1), play(2)])
    assert episodes(download(app, since=first["timestamp"])) == ["1.mp3"]


def test_ids_set_back_by_a_restore_do_not_hide_another_apps_actions(app, alice, clock):
    """A restore from a backup sets the ids back, and an app's cookie outlives it (apps keep
    theirs in memory while they run): a row is left out only when both its id and the second
    it was received in are the cookie's."""
    upload(other_app(), [play(100)])
    backup = EpisodeAction.objects.latest("id").pk
    first = download(app)
    mine = upload(app, [play(1), play(2)])
    clock.advance(minutes=30)
    _restore_ids_to(backup)

    upload(other_app(), [play(7), play(8)])  # the ids the app's cookie names

    for since in (first["timestamp"], mine["timestamp"], mine["timestamp"] + 1):
        assert {"7.mp3", "8.mp3"} <= set(episodes(download(app, since=since)))


def _restore_ids_to(last: int) -> None:
    """What restoring a backup taken when `last` was the newest row does to the ids."""
    EpisodeAction.objects.filter(pk__gt=last).delete()
    table = EpisodeAction._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), %s)", [last])
        else:
            cursor.execute("UPDATE sqlite_sequence SET seq = %s WHERE name = %s", [last, table])


def test_the_apps_own_action_comes_with_another_apps_on_the_same_episode(app, alice):
    """AntennaPod and Kasts settle an episode's position among one download's actions (and
    their own not yet sent): without its own newer play beside it, a phone's older play uploaded
    late would set the position back."""
    first = download(app)
    upload(app, [play(1, timestamp="2024-05-01T11:00:00", position=2000)])
    upload(app, [play(2)])
    upload(other_app(), [play(1, timestamp="2024-05-01T10:00:00", position=100)])

    got = download(app, since=first["timestamp"])["actions"]
    assert sorted((a["episode"][-5:], a["position"]) for a in got) == [
        ("1.mp3", 100),
        ("1.mp3", 2000),
    ]


def test_an_answer_too_long_for_one_body_leaves_nothing_out(app, alice):
    first = download(app)
    count = 1000  # episodes.answers.PIECE: written in pieces as it is read
    answer = upload(app, [play(n) for n in range(count)])
    assert len(download(app, since=answer["timestamp"])["actions"]) == count
    assert first["timestamp"] <= answer["timestamp"]


def test_the_cookie_stays_small_whatever_the_uploads(app, alice, clock):
    """An app that uploads one action at a time and seldom downloads (Kasts' quick sync on each
    change of playback) adds a second to the cookie with each upload; ids far apart (a large
    instance) take more characters each. The value stays within a cookie's 4,096 bytes."""
    download(app)
    for n in range(300):
        clock.advance(seconds=7)
        upload(app, [play(n)])
    assert len(app.cookies[COOKIE].value) < 3100

    far_apart = {1_700_000_000: list(range(10**9, 10**9 + 600 * 10**6, 10**6))}
    value = uploaded.written(uploaded.kept_after(far_apart, answered=0))
    assert len(value) <= uploaded.MOST_CHARACTERS
    kept = uploaded.parsed(value)[1_700_000_000]
    assert kept == far_apart[1_700_000_000][-len(kept) :]  # the latest


def _unsigned(client: APIClient, user: Any) -> str:
    value = client.cookies[COOKIE].value
    return signing.Signer(salt=f"episodes.{COOKIE}.{user.pk}").unsign(value)


@pytest.mark.parametrize(
    "kept",
    [{}, {1700000000: [5]}, {1700000000: [5, 6, 90]}, {1700000000: [1], 1700000002: [3, 4]}],
)
def test_the_cookies_value_reads_back_as_written(kept):
    assert uploaded.parsed(uploaded.written(kept)) == kept


@pytest.mark.parametrize("value", ["junk", "1-", "-5", "1-a.b", "1-2_x", "1:2;3"])
def test_a_value_in_no_known_shape_names_nothing(value):
    assert uploaded.parsed(value) == {}


def test_kept_after_drops_seconds_before_the_answer_and_keeps_the_latest_ids():
    kept = {10: [1, 2], 12: [3], 13: [4, 5]}
    assert uploaded.kept_after(kept, answered=12) == {12: [3], 13: [4, 5]}
    assert uploaded.kept_after(kept, answered=12, second=13, added=[7, 6]) == {
        12: [3],
        13: [4, 5, 6, 7],
    }
    many = {20: list(range(uploaded.MOST + 5))}
    assert uploaded.kept_after(many, answered=0) == {20: list(range(5, uploaded.MOST + 5))}
