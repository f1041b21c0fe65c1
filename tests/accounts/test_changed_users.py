"""Changed users announced to every web process through Redis (accounts.invalidation): a process
trusts its cache of active users only while it hears the announcements, and a request that read
a user before a change never puts back what the change's announcement dropped. The servers'
side, two gunicorn servers on one Redis, is tests/e2e/test_changed_accounts_across_servers.py."""

import logging
import signal
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from accounts import active as auth
from accounts import invalidation
from accounts.services import refresh_token_for, token_login, user_deactivate
from tests import servers
from tests.factories import UserFactory

pytestmark = pytest.mark.e2e

PASSWORD = "correct horse battery staple"
NEW_PASSWORD = "another horse, another staple"
LIST = "/v1/subscriptions"


def eventually(condition: Callable[[], bool], seconds: float = 15) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@pytest.fixture(scope="module")
def redis_server() -> Iterator[servers.RedisServer]:
    with servers.redis() as server:
        yield server


@pytest.fixture
def on_redis(settings: Any) -> Iterator[Callable[[str], None]]:
    """Puts this process on a Redis (its URL), as each web process of a deployment of several;
    its subscriber is stopped at the end."""

    def use(url: str) -> None:
        auth.active_users.changes.stop()
        settings.REDIS_CACHE_URL = url

    yield use
    auth.active_users.changes.stop()


@pytest.fixture
def subscribed(redis_server: servers.RedisServer, on_redis: Callable[[str], None]) -> str:
    if redis_server.process is None:
        redis_server.start()
    on_redis(redis_server.url)
    assert auth.active_users.changes.listening()  # the first use waits for the subscription
    return redis_server.url


@pytest.fixture
def closed_port() -> str:
    """The URL of a Redis that is down: nothing listens at its port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"redis://127.0.0.1:{sock.getsockname()[1]}/1"


@pytest.fixture
def silent_port() -> Iterator[str]:
    """The URL of a Redis that does not answer: it accepts connections and never replies."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        yield f"redis://127.0.0.1:{silent.getsockname()[1]}/1"


@pytest.fixture
def member(db: None) -> Any:
    return UserFactory(with_password=PASSWORD)


def bearer(user: Any) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {refresh_token_for(user).access_token}")
    return client


def reads_the_user(client: APIClient) -> bool:
    """Whether a request of the client (answered 200) read its user from the database."""
    with CaptureQueriesContext(connection) as captured:
        assert client.get(LIST).status_code == 200
    return any("auth_user" in query["sql"] for query in captured.captured_queries)


def changed_elsewhere(user: Any, **fields: Any) -> None:
    """As another web process changes a user: the row, then (once committed) the announcement.
    This process hears only the announcement (update() sends no signal)."""
    get_user_model().objects.filter(pk=user.pk).update(**fields)
    invalidation.publish([user.pk])


def refused(client: APIClient) -> bool:
    return client.get(LIST).status_code == 401


# --- While subscribed: remembered, and dropped when announced -----------------------------------


def test_while_subscribed_a_user_is_remembered(member, subscribed):
    client = bearer(member)

    assert reads_the_user(client)
    assert not reads_the_user(client)


def test_an_announced_change_ends_the_remembered_users_tokens_at_once(member, subscribed):
    client = bearer(member)
    assert reads_the_user(client)

    changed_elsewhere(member, is_active=False)

    assert refused(client)


def test_an_announcement_that_arrived_is_applied_before_the_next_request(
    member, subscribed, monkeypatch
):
    """On a busy host the listener thread may not run for a while after an announcement has
    reached the process: the next request reads it itself before it trusts the cache."""
    client = bearer(member)
    assert reads_the_user(client)
    readable = invalidation._readable

    def busy(sock: Any, seconds: float) -> bool:
        if seconds:  # the listener's wait: it is not scheduled for a while
            time.sleep(5)
            return False
        return readable(sock, seconds)

    monkeypatch.setattr(invalidation, "_readable", busy)
    time.sleep(1.5)  # the listener's wait under way ends (1 s at most); its next is busy

    changed_elsewhere(member, is_active=False)

    assert refused(client)


# --- Not subscribed: not trusted ----------------------------------------------------------------


def test_while_redis_is_down_the_cache_is_not_trusted(member, on_redis, closed_port):
    on_redis(closed_port)
    client = bearer(member)

    assert not auth.active_users.changes.listening()
    assert reads_the_user(client)
    assert reads_the_user(client)  # read again: an announcement could not be heard
    get_user_model().objects.filter(pk=member.pk).update(is_active=False)  # unannounced
    assert refused(client)


def test_a_redis_that_does_not_answer_is_not_trusted(member, on_redis, silent_port):
    on_redis(silent_port)
    client = bearer(member)

    assert reads_the_user(client)  # the first use waits for a subscription: a second or two
    assert not auth.active_users.changes.listening()
    assert reads_the_user(client)


def test_subscribed_again_after_an_outage_everything_is_forgotten(member, subscribed, redis_server):
    """What was announced while it was away went unheard: a new password made meanwhile."""
    client = bearer(member)
    assert reads_the_user(client)

    redis_server.stop()
    assert eventually(lambda: not auth.active_users.changes.listening())
    changed_elsewhere(member, password=make_password(NEW_PASSWORD))  # its announcement is lost
    redis_server.start()
    assert eventually(auth.active_users.changes.listening)

    assert refused(client)


def test_a_connection_gone_silent_is_not_trusted_after_a_few_seconds(subscribed, redis_server):
    """A Redis that stops answering without closing the connection (a host cut off, here a
    stopped process) would let announcements go unheard: pinged, it is given up on."""
    assert redis_server.process is not None
    redis_server.process.send_signal(signal.SIGSTOP)
    try:
        started = time.monotonic()
        assert eventually(lambda: not auth.active_users.changes.listening(), seconds=10)
        silent_for = time.monotonic() - started
    finally:
        redis_server.process.send_signal(signal.SIGCONT)

    assert silent_for < 5
    assert eventually(auth.active_users.changes.listening)


# --- A request that read the user before a change -----------------------------------------------


def test_a_user_read_before_an_announced_change_is_not_remembered(member, subscribed, monkeypatch):
    """The request reads the row, then the change commits elsewhere and its announcement
    arrives, then the request would remember what it read: it must not."""
    client = bearer(member)
    mark = auth.password_mark

    def read_then_changed_elsewhere(password_hash: str) -> str:
        monkeypatch.setattr(auth, "password_mark", mark)  # once
        before = auth.active_users.generation()
        changed_elsewhere(member, password=make_password(NEW_PASSWORD))
        assert eventually(lambda: auth.active_users.generation() > before)
        return mark(password_hash)

    monkeypatch.setattr(auth, "password_mark", read_then_changed_elsewhere)
    # Read before the change: the old token still counted for this request.
    assert client.get(LIST).status_code == 200

    assert refused(client)


def test_nothing_read_before_a_forget_is_remembered_after_it(member):
    read_at = auth.active_users.generation()
    auth.active_users.forget([member.pk])

    auth.active_users.add(member.pk, auth.password_mark(member.password), read_at)
    auth.active_users.add_user(member, read_at)
    assert auth.active_users.mark(member.pk) is None

    auth.active_users.add(member.pk, "read since", auth.active_users.generation())
    assert auth.active_users.mark(member.pk) == "read since"


# --- Redis down: changes are still made, and requests still answered ------------------------------


def test_while_redis_is_down_a_change_is_made_and_logged(
    member, on_redis, closed_port, caplog, django_capture_on_commit_callbacks
):
    on_redis(closed_port)
    old = bearer(member)
    other: Any = UserFactory(with_password=PASSWORD)
    others = bearer(other)
    staff = UserFactory(is_staff=True)

    with (
        caplog.at_level(logging.WARNING, logger="accounts.invalidation"),
        django_capture_on_commit_callbacks(execute=True),
    ):
        member.set_password(NEW_PASSWORD)
        member.save()
        user_deactivate(user_ids=[other.pk], acting_user=staff)

    assert refused(old)
    assert refused(others)
    new = APIClient()
    token = token_login(username=member.username, password=NEW_PASSWORD).access_token
    new.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert new.get(LIST).status_code == 200
    announced = [r for r in caplog.records if "Could not announce" in r.getMessage()]
    assert len(announced) == 2


# --- What is announced ------------------------------------------------------------------------


def test_a_new_password_is_announced_and_a_sign_in_is_not(
    member, subscribed, django_capture_on_commit_callbacks
):
    """A sign-in saves the last login alone, which changes nothing another process checks."""
    listener = redis.Redis.from_url(subscribed).pubsub(ignore_subscribe_messages=True)
    listener.subscribe(invalidation.CHANNEL)
    listener.get_message(timeout=1)  # the subscription's confirmation

    with django_capture_on_commit_callbacks(execute=True):
        token_login(username=member.username, password=PASSWORD)
    signed_in = listener.get_message(timeout=0.5)
    with django_capture_on_commit_callbacks(execute=True):
        member.set_password(NEW_PASSWORD)
        member.save()
    changed = listener.get_message(timeout=5)
    listener.close()

    assert signed_in is None
    assert changed is not None
    assert changed["data"] == f"[{member.pk}]".encode()
