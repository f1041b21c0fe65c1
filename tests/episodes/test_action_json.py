"""A download's actions are written as JSON by the database (episodes.actions.action_json):
byte for byte what orjson writes of action_body, on PostgreSQL and SQLite, whatever the text
holds (quotes, backslashes, control characters, any Unicode the database keeps), whichever
fields an action has, and over several chunks."""

import hashlib
import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from episodes import selectors
from episodes.actions import action_body
from episodes.answers import actions_answer, texts_of
from episodes.models import EpisodeAction
from gpodder.models import Device
from tests.factories import UserFactory

RECEIVED = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
_made = itertools.count()

# What the database's text keeps: no NUL, no lone surrogate (neither can be stored).
TEXT = st.text(
    alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"),
    max_size=40,
)
TRICKY = [
    'a "quoted" \\ backslash /slash',
    "\x01\x07\x08\t\n\x0b\x0c\r\x1b\x1f\x7f",
    "é ü ß 中文 🎧 \u2028\u2029 \ufeff \uffff \U0010ffff",
    "https://cdn.example/ep.mp3?a=1&b=<2>",
    "",
]


def stored(user: Any, device: Device | None, **fields: Any) -> EpisodeAction:
    n = next(_made)
    values = {
        "podcast": "https://feeds.example/show.xml",
        "podcast_key": hashlib.sha256(b"show").hexdigest(),
        "episode": f"https://cdn.example/{n}.mp3",
        "action": "download",
        "timestamp": datetime(2026, 11, 1, 10, 30, 15, 999_999, tzinfo=UTC),
        "received": RECEIVED,
        "guid": "",
        "identity": hashlib.sha256(str(n).encode()).hexdigest(),
        **fields,
    }
    return EpisodeAction.objects.create(user=user, device=device, **values)


def both(user: Any, with_device: bool) -> tuple[list[str], list[str]]:
    """The database's texts, and orjson's of action_body, of the user's actions."""
    written = list(selectors.action_texts_since(user=user, since=0, with_device=with_device))
    rows = selectors.actions_since(user=user, since=0)
    return written, list(texts_of(rows, with_device=with_device))


@pytest.fixture
def person(db: None) -> Any:
    return UserFactory()


@pytest.mark.parametrize("with_device", [True, False])
def test_every_field_and_tricky_text_is_written_as_orjson_would(
    person: Any, with_device: bool
) -> None:
    phone = Device.objects.create(
        user=person, device_id="phone-1.x_Y", created=RECEIVED, last_used=RECEIVED
    )
    for text in TRICKY:
        stored(person, phone, podcast=f"https://feeds.example/{text}", episode=text or "e")
        stored(person, None, guid=text, action="delete")
        stored(person, phone, action="play", position=0, started=None, total=None, guid=text)
    stored(person, phone, action="play", started=0, position=2**31 - 1, total=3600)
    stored(person, None, action="play", started=None, position=5, total=10)
    stored(person, phone, action="new", timestamp=datetime(5, 1, 2, 3, 4, 5, tzinfo=UTC))
    stored(person, phone, action="flattr", timestamp=datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC))
    written, expected = both(person, with_device)
    assert len(written) == 3 * len(TRICKY) + 4
    assert written == expected
    assert [orjson.loads(text) for text in written] == [
        action_body(row, with_device=with_device)
        for row in selectors.actions_since(user=person, since=0)
    ]


@hypothesis_settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(podcast=TEXT, episode=TEXT, guid=TEXT, device_named=st.booleans())
def test_any_text_is_written_as_orjson_would(
    person: Any, podcast: str, episode: str, guid: str, device_named: bool
) -> None:
    EpisodeAction.objects.filter(user=person).delete()
    device, _ = Device.objects.get_or_create(
        user=person, device_id="d", defaults={"created": RECEIVED, "last_used": RECEIVED}
    )
    stored(person, device if device_named else None, podcast=podcast, episode=episode, guid=guid)
    stored(person, device, action="play", position=7, podcast=podcast, guid=guid)
    for with_device in (True, False):
        written, expected = both(person, with_device)
        assert written == expected


def test_a_download_over_several_chunks_is_whole_and_in_order(
    person: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunks follow one another by (received, id), with received read back from the rows."""
    monkeypatch.setattr(selectors, "CHUNK", 3)
    for n in range(10):
        stored(person, None, received=RECEIVED + timedelta(seconds=n // 4), episode=f"e{n}")
    written, expected = both(person, with_device=True)
    assert [orjson.loads(text)["episode"] for text in written] == [f"e{n}" for n in range(10)]
    assert written == expected
    later = list(selectors.action_texts_since(user=person, since=int(RECEIVED.timestamp()) + 2))
    assert [orjson.loads(text)["episode"] for text in later] == ["e8", "e9"]


@pytest.mark.parametrize("count", [0, 1, 999, 1000, 2500])
def test_the_answer_is_orjsons_of_the_whole(count: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """One body, or pieces when long: the same bytes as orjson's of the whole answer."""
    bodies = [{"podcast": "p", "episode": f"é{n}\n", "action": "new"} for n in range(count)]
    told: list[int] = []
    answer = actions_answer(
        (orjson.dumps(body).decode() for body in bodies), 1_700_000_000, sent=told.append
    )
    content = b"".join(answer)
    assert content == orjson.dumps({"actions": bodies, "timestamp": 1_700_000_000})
    assert told == [count]
