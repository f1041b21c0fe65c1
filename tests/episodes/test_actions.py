"""Reading an upload's actions (pure functions), and stamping their received second."""

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from core.exceptions import InvalidInput
from episodes.actions import SentAction, actions_parsed, episode_sanitized, identity
from episodes.models import EpisodeAction, ReceivedClock
from episodes.services import actions_upload
from tests.factories import UserFactory

PLAY = {"podcast": "https://a.example/feed", "episode": "https://a.example/1.mp3"}


def parsed(*items, limit=100):
    return actions_parsed(list(items), limit=limit)


def refused(*items, limit=100):
    with pytest.raises(InvalidInput) as caught:
        parsed(*items, limit=limit)
    return caught.value


def test_an_antennapod_play_action_is_read_whole():
    [action] = parsed(
        {
            **PLAY,
            "guid": "urn:uuid:1",
            "action": "play",
            "timestamp": "2024-05-01T10:30:00",
            "started": 0,
            "position": 120,
            "total": 3600,
            "device": "pixel-7",
        }
    )
    assert action.action == "play"
    assert action.timestamp == datetime(2024, 5, 1, 10, 30, tzinfo=UTC)
    assert (action.started, action.position, action.total) == (0, 120, 3600)
    assert (action.device, action.guid) == ("pixel-7", "urn:uuid:1")


@pytest.mark.parametrize(
    ("sent", "utc"),
    [
        ("2024-05-01T10:30:00", datetime(2024, 5, 1, 10, 30, tzinfo=UTC)),
        ("2024-05-01T10:30:00Z", datetime(2024, 5, 1, 10, 30, tzinfo=UTC)),
        ("2024-05-01T12:30:00+02:00", datetime(2024, 5, 1, 10, 30, tzinfo=UTC)),
        ("2024-05-01T10:30:00.250", datetime(2024, 5, 1, 10, 30, 0, 250000, tzinfo=UTC)),
        ("2024-05-01", datetime(2024, 5, 1, tzinfo=UTC)),
    ],
)
def test_timestamps_are_read_as_utc(sent, utc):
    [action] = parsed({**PLAY, "action": "new", "timestamp": sent})
    assert action.timestamp == utc


def test_the_action_is_read_case_insensitively_and_absent_optionals_are_empty():
    [action] = parsed({**PLAY, "action": "DOWNLOAD", "guid": "", "device": "", "timestamp": None})
    assert (action.action, action.guid, action.device, action.timestamp) == (
        "download",
        "",
        None,
        None,
    )


@pytest.mark.parametrize(
    ("item", "field", "problem"),
    [
        ("not an object", "action", "must be a JSON object"),
        ({**PLAY}, "action", "is required"),
        ({**PLAY, "action": "listen"}, "action", "must be one of"),
        ({**PLAY, "action": 1}, "action", "must be a string"),
        ({"episode": "e", "action": "new"}, "podcast", "is required"),
        ({"podcast": "p", "action": "new"}, "episode", "is required"),
        ({**PLAY, "action": "play"}, "position", "is required for a play action"),
        ({**PLAY, "action": "play", "position": -1}, "position", "must be from 0"),
        ({**PLAY, "action": "play", "position": 2**31}, "position", "must be from 0"),
        ({**PLAY, "action": "play", "position": "12"}, "position", "must be whole seconds"),
        ({**PLAY, "action": "play", "position": 1.5}, "position", "must be whole seconds"),
        ({**PLAY, "action": "play", "position": True}, "position", "must be whole seconds"),
        ({**PLAY, "action": "play", "position": 1, "total": -5}, "total", "must be from 0"),
        ({**PLAY, "action": "download", "position": 3}, "position", "is only for play"),
        ({**PLAY, "action": "new", "started": 0}, "started", "is only for play"),
        ({**PLAY, "action": "new", "timestamp": "yesterday"}, "timestamp", "ISO 8601"),
        ({**PLAY, "action": "new", "timestamp": 1714559400}, "timestamp", "ISO 8601"),
        ({**PLAY, "action": "new", "timestamp": "0001-01-01T00:00:00+01:00"}, "timestamp", "ISO"),
        ({**PLAY, "action": "new", "timestamp": "9999-12-31T23:59:59-01:00"}, "timestamp", "ISO"),
        ({**PLAY, "action": "new", "device": "my phone"}, "device", "ASCII letters"),
        ({**PLAY, "action": "new", "device": "x" * 65}, "device", "ASCII letters"),
        ({**PLAY, "action": "new", "guid": "a\x00b"}, "guid", "control or invalid"),
        ({**PLAY, "action": "new", "guid": "\ud800"}, "guid", "control or invalid"),
        ({**PLAY, "action": "new", "guid": "g" * 2049}, "guid", "longer than 2048"),
        ({**PLAY, "action": "new", "guid": ["g"]}, "guid", "must be a string"),
        ({"podcast": "p", "episode": "e\x7f", "action": "new"}, "episode", "control"),
    ],
)
def test_a_malformed_action_is_refused_naming_its_index_and_field(item, field, problem):
    error = refused({**PLAY, "action": "new"}, item)
    assert error.message.startswith(f"Input could not be validated: action 1: {field} ")
    assert problem in error.message
    assert list(error.errors) == ["1"]
    assert list(error.errors["1"]) == [field]


def test_a_whole_float_is_whole_seconds():
    [action] = parsed({**PLAY, "action": "play", "position": 30.0})
    assert action.position == 30


@pytest.mark.parametrize("body", [{}, "[]", None, 5])
def test_the_body_must_be_a_list(body):
    with pytest.raises(InvalidInput, match="send a JSON list of episode actions"):
        actions_parsed(body, limit=10)


def test_more_actions_than_the_limit_are_refused_naming_it():
    error = refused(*[{**PLAY, "action": "new"}] * 11, limit=10)
    assert "too many episode actions, at most 10 per request" in error.message


def test_unicode_urls_and_guids_are_kept():
    [action] = parsed(
        {
            "podcast": "https://例え.jp/フィード",
            "episode": "https://例え.jp/一.mp3",
            "action": "new",
        }
    )
    assert action.episode == "https://例え.jp/一.mp3"


@pytest.mark.parametrize(
    ("sent", "used"),
    [
        ("https://a.example/1.mp3", "https://a.example/1.mp3"),
        ("  https://a.example/1.mp3\n", "https://a.example/1.mp3"),
        ("feed://a.example/1.mp3", "http://a.example/1.mp3"),
        ("ITPC://a.example/1.mp3", "http://a.example/1.mp3"),
        # A guid, not a URL: nothing is added to it.
        ("tag:example.org,2024:episode-1", "tag:example.org,2024:episode-1"),
        ("https://a.example/my episode.mp3", "https://a.example/my episode.mp3"),
        ("   ", None),
    ],
)
def test_episode_urls_are_sanitised_without_making_a_guid_a_url(sent, used):
    assert episode_sanitized(sent) == used


def test_identity_tells_apart_every_field_and_ignores_the_timestamps_zone():
    base: dict[str, Any] = {
        "podcast": "p",
        "episode": "e",
        "action": "play",
        "timestamp": datetime(2024, 5, 1, 10, tzinfo=UTC),
        "device": "d",
        "guid": "g",
        "started": 0,
        "position": 5,
        "total": 10,
    }
    same = identity(**{**base, "timestamp": base["timestamp"].astimezone()})
    assert identity(**base) == same
    changed: list[dict[str, Any]] = [
        {"podcast": "p2"},
        {"episode": "e2"},
        {"action": "new", "started": None, "position": None, "total": None},
        {"timestamp": datetime(2024, 5, 1, 10, 0, 1, tzinfo=UTC)},
        {"device": None},
        {"guid": ""},
        {"started": 1},
        {"position": 6},
        {"total": None},
    ]
    digests = {identity(**{**base, **change}) for change in changed}
    assert len(digests) == len(changed)
    assert identity(**base) not in digests


# --- The received second --------------------------------------------------------------------

NOW = datetime(2024, 5, 1, 10, 0, 0, 700000, tzinfo=UTC)
SECOND = NOW.replace(microsecond=0)


@pytest.fixture
def user(db: None) -> Any:
    return UserFactory()


def stamped(user: Any, n: int, now: datetime, clock: Any) -> datetime:
    """The received second of an upload of `n` actions at `now` (through the service, as an
    app's upload is stored)."""
    clock.now = now
    actions = [
        SentAction(PLAY["podcast"], f"https://a.example/{now}/{i}.mp3", "download", None, None, "")
        for i in range(n)
    ]
    actions_upload(user=user, actions=actions)
    found = EpisodeAction.objects.filter(episode__startswith=f"https://a.example/{now}/")
    [second] = set(found.values_list("received", flat=True))
    return second


def test_actions_take_the_current_second(user, clock):
    assert stamped(user, 3, NOW, clock) == SECOND
    assert ReceivedClock.objects.get(user=user).second == SECOND


def test_a_whole_upload_takes_one_second_however_large(user, clock):
    """Answers are whole (no page to cut between seconds): a first sync's thousands of actions
    are not stamped ahead of the clock, where every device's next downloads would read them
    again until the clock caught up."""
    assert stamped(user, 1200, NOW, clock) == SECOND
    assert stamped(user, 1, NOW, clock) == SECOND


def test_stamps_never_go_back_even_when_the_clock_does(user, clock):
    latest = SECOND + timedelta(seconds=10)  # a web machine whose clock runs ahead
    stamped(user, 1, latest, clock)
    assert stamped(user, 1, NOW, clock) == latest
    assert ReceivedClock.objects.get(user=user).second == latest


def test_an_older_latest_second_does_not_count(user, clock):
    stamped(user, 1, NOW - timedelta(seconds=1), clock)
    assert stamped(user, 1, NOW, clock) == SECOND
