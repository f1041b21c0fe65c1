"""The data set of `make scale`: accounts shaped alike, loaded into a migrated database with
PostgreSQL's COPY.

Every account has the same shape, so that one at the start, the middle or the end of the
tables can be compared with the same account on a small database:
- 10 subscriptions, to 10 different feeds of `feeds`: one whose guid changed (two guid rows),
  one whose feed moved (two URL rows), one unsubscribed and, for one account in five, one
  deleted through a deletion that succeeded;
- two devices (a phone and a laptop); the phone has the spelling of 5 feeds it sent, the laptop
  a Nextcloud read point;
- 20 episode actions over its feeds (one under the moved feed's earlier URL), each of an
  episode in its feed's catalogue, half with the item's guid; a received clock;
- one session, one outstanding refresh token and, for one account in ten, an app password.
Every feed has its check (a guid, a title, artwork) and a catalogue of 20 episodes.

Rows are written in id order, with the secondary indexes and unique constraints dropped and the
foreign keys' triggers off (the rows are consistent by construction, as pg_dump's
--disable-triggers assumes); the indexes and constraints are then built again as the migrations
made them, the sequences moved past the ids, and the tables vacuumed and analysed.
"""

import hashlib
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

import psycopg
from tqdm import tqdm

T0 = datetime(2024, 1, 1, tzinfo=UTC)
SUBSCRIPTIONS = 10  # per account
ACTIONS = 20  # per account
CATALOGUE = 20  # episodes in each feed's catalogue
LISTENED = 5  # an account's actions name the first few of a feed's episodes
PHONE_FEEDS = 5  # feed spellings the phone sent
# Steps through the feeds: an account's 10 feeds are 10 different ones when `feeds` has no
# common divisor with STEP * k for k < 10 (Shape checks it).
STEP = 4729
ACCOUNT_SPACING = 30  # seconds between two accounts' sign-ups


@dataclass(frozen=True)
class Shape:
    accounts: int
    feeds: int

    def __post_init__(self) -> None:
        offsets = {(STEP * k) % self.feeds for k in range(SUBSCRIPTIONS)}
        if len(offsets) != SUBSCRIPTIONS:
            raise ValueError(f"{self.feeds} feeds do not give each account 10 different ones")

    def feed_of(self, account: int, k: int) -> int:
        return (account * 7919 + STEP * k) % self.feeds

    def rows(self) -> dict[str, int]:
        a = self.accounts
        return {
            "auth_user": a,
            "subscriptions_subscription": a * SUBSCRIPTIONS,
            "subscriptions_subscriptionguid": a * (SUBSCRIPTIONS + 1),
            "subscriptions_subscriptionfeed": a * (SUBSCRIPTIONS + 1),
            "gpodder_device": a * 2,
            "gpodder_devicefeed": a * PHONE_FEEDS,
            "nextcloud_actionsread": a,
            "episodes_receivedclock": a,
            "episodes_episodeaction": a * ACTIONS,
            "deletions_deletion": a // 5,
            "accounts_apppassword": a // 10,
            "django_session": a,
            "token_blacklist_outstandingtoken": a,
            "feedchecks_feedcheck": self.feeds,
            "feedchecks_feedepisode": self.feeds * CATALOGUE,
        }


# --- what each account and feed is --------------------------------------------------------


def stamp(seconds: float) -> str:
    return (T0 + timedelta(seconds=seconds)).isoformat(sep=" ")


def joined(account: int) -> int:
    """Seconds from T0 to the account's sign-up."""
    return account * ACCOUNT_SPACING


def username(account: int) -> str:
    return f"user{account:07d}"


def feed_url(feed: int) -> str:
    return f"https://feeds{feed % 997}.example.net/show/{feed}/rss.xml"


def earlier_feed_url(feed: int) -> str:
    return f"http://old-feeds.example.org/{feed}.xml"


def episode_url(feed: int, episode: int) -> str:
    return f"https://media.example.net/{feed}/episode-{episode}.mp3"


def episode_guid(feed: int, episode: int) -> str:
    return f"urn:episode:{feed}:{episode}"


def subscription_guid(account: int, k: int, earlier: bool = False) -> str:
    return f"{account:08x}-{k:04x}-4000-8000-{255 if earlier else 0:012x}"


def subscription_id(account: int, k: int) -> int:
    return (account - 1) * SUBSCRIPTIONS + k + 1


def created(account: int, k: int) -> int:
    return joined(account) + 60 * k


def action_received(account: int, j: int) -> int:
    """Seconds from T0 to when the account's action j was received (10 s after it happened)."""
    return joined(account) + 3600 * (j + 1) + 10


def device_pk(account: int, laptop: bool = False) -> int:
    return 2 * (account - 1) + (2 if laptop else 1)


def identity(**fields: Any) -> str:
    """The action's identity as the service computes it on upload (its duplicate check)."""
    from episodes.actions import identity as computed

    return computed(**fields)


@cache
def feed_key(url: str) -> str:
    from subscriptions import feeds

    return feeds.feed_key_digest(url)


@cache
def episode_key(url: str) -> str:
    from subscriptions import feeds

    return feeds.url_key_digest(url)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def text(value: int | None) -> str:
    return N if value is None else str(value)


# --- the rows of each table, as COPY's text lines --------------------------------------------

Rows = Callable[[Shape, dict[str, str]], Iterator[str]]
N = "\\N"


def users(shape: Shape, fixed: dict[str, str]) -> Iterator[str]:
    password = fixed["password"]
    for a in range(1, shape.accounts + 1):
        name = username(a)
        yield f"{a}\t{password}\t{N}\tf\t{name}\t\t\t{name}@example.net\tf\tt\t{stamp(joined(a))}\n"


def subscriptions(shape: Shape, fixed: dict[str, str]) -> Iterator[str]:
    for a in range(1, shape.accounts + 1):
        for k in range(SUBSCRIPTIONS):
            at = created(a, k)
            guid_changed, deleted, subscribed, changed = N, N, "t", at
            if k == 0:
                guid_changed = stamp(at + 86400)
            elif k == 8 and a % 5 == 0:
                deleted, subscribed, changed = stamp(at + 2 * 86400), "f", at + 2 * 86400
            elif k == 9:
                subscribed, changed = "f", at + 3 * 86400
            url = feed_url(shape.feed_of(a, k))
            yield (
                f"{subscription_id(a, k)}\t{subscription_guid(a, k)}\t{url}\t{subscribed}\t"
                f"{stamp(changed)}\t{guid_changed}\t{deleted}\t{stamp(at)}\t{a}\n"
            )


def subscription_guids(shape: Shape, fixed: dict[str, str]) -> Iterator[str]:
    for a in range(1, shape.accounts + 1):
        base = (a - 1) * (SUBSCRIPTIONS + 1)
        for k in range(SUBSCRIPTIONS):
            at = stamp(created(a, k) + (86400 if k == 0 else 0))
            guid, sub = subscription_guid(a, k), subscription_id(a, k)
            yield f"{base + k + 1}\t{guid}\t{at}\t{sub}\t{a}\t{N}\n"
        earlier, replaced = stamp(created(a, 0)), stamp(created(a, 0) + 86400)
        guid = subscription_guid(a, 0, earlier=True)
        yield f"{base + 11}\t{guid}\t{earlier}\t{subscription_id(a, 0)}\t{a}\t{replaced}\n"


def subscription_feeds(shape: Shape, fixed: dict[str, str]) -> Iterator[str]:
    for a in range(1, shape.accounts + 1):
        base = (a - 1) * (SUBSCRIPTIONS + 1)
        for k in range(SUBSCRIPTIONS):
            url, at, sub = (
                feed_url(shape.feed_of(a, k)),
                stamp(created(a, k)),
                subscription_id(a, k),
            )
            yield f"{base + k + 1}\t{url}\t{feed_key(url)}\t{at}\t{sub}\t{a}\n"
        url = earlier_feed_url(shape.feed_of(a, 1))
        at = stamp(created(a, 1) - 86400)
        yield f"{base + 11}\t{url}\t{feed_key(url)}\t{at}\t{subscription_id(a, 1)}\t{a}\n"


def devices(shape: Shape, fixed: dict[str, str]) -> Iterator[str]:
    for a in range(1, shape.accounts + 1):
        at, used = stamp(joined(a)), stamp(action_received(a, ACTIONS - 1))
        pulled = int((T0 + timedelta(seconds=joined(a) + 3600)).timestamp())
        yield f"{device_pk(a)}\tphone\tPhone\tmobile\t{at}\t{used}\t{a}\t{pulled}\n"
        yield f"{device_pk(a, laptop=True)}\tlaptop\tLaptop\tlaptop\t{at}\t{used}\t{a}\t{N}\n"


def device_feeds(shape: Shape, fixed: dict[str, str]) -> Iterator[str]:
    for a in range(1, shape.accounts + 1):
        for k in range(PHONE_FEEDS):
            url = feed_url(shape.feed_of(a, k))
            feed_pk = (a - 1) * (SUBSCRIPTIONS + 1) + k + 1
            pk = (a - 1) * PHONE_FEEDS + k + 1
            yield f"{pk}\t{url}\t{stamp(created(a, k))}\t{device_pk(a)}\t{feed_pk}\n"


def actions_read(shape: Shape, fixed: dict[str, str]) -> Iterator[str]:
    for a in range(1, shape.accounts + 1):
        up_to = int((T0 + timedelta(seconds=action_received(a, 9))).timestamp())
        yield f"{device_pk(a, laptop=True)}\t{up_to}\n"


def received_clocks(shape: Shape, fixed: dict[str, str]) -> Iterator[str]:
    for a in range(1, shape.accounts + 1):
        yield f"{a}\t{stamp(action_received(a, ACTIONS - 1))}\t0\n"


def episode_actions(shape: Shape, fixed: dict[str, str]) -> Iterator[str]:
    for a in range(1, shape.accounts + 1):
        for j in range(ACTIONS):
            k = j % SUBSCRIPTIONS
            if k == 8 and a % 5 == 0:
                k = 7  # a deleted subscription's actions were deleted with it
            feed = shape.feed_of(a, k)
            podcast = earlier_feed_url(feed) if (k == 1 and j == 1) else feed_url(feed)
            episode = (j // SUBSCRIPTIONS + a) % LISTENED
            url = episode_url(feed, episode)
            guid = episode_guid(feed, episode) if j % 2 == 0 else ""
            received = action_received(a, j)
            if j % 4 == 0:
                action, started, position, total = "download", None, None, None
            else:
                action, started, position, total = "play", 0, 60 * j, 1800
            device = "laptop" if j % 2 else "phone"
            key = identity(podcast=podcast, episode=url, action=action, timestamp=T0 + timedelta(
                seconds=received - 10), device=device, guid=guid, started=started,
                position=position, total=total)  # fmt: skip
            yield (
                f"{(a - 1) * ACTIONS + j + 1}\t{podcast}\t{feed_key(podcast)}\t{url}\t{action}\t"
                f"{stamp(received - 10)}\t{stamp(received)}\t{guid}\t{text(started)}\t"
                f"{text(position)}\t{text(total)}\t{key}\t{device_pk(a, laptop=j % 2 == 1)}\t{a}\t"
                f"{episode_key(url)}\n"
            )


def deletions(shape: Shape, fixed: dict[str, str]) -> Iterator[str]:
    for a in range(5, shape.accounts + 1, 5):
        at = created(a, 8) + 2 * 86400
        yield (
            f"{a // 5}\t{subscription_guid(a, 8)}\tSUCCESS\t\t{stamp(at)}\t{stamp(at + 1)}\t1\t1\t"
            f"{stamp(at)}\t{subscription_id(a, 8)}\t{a}\n"
        )


def app_passwords(shape: Shape, fixed: dict[str, str]) -> Iterator[str]:
    for a in range(10, shape.accounts + 1, 10):
        at = stamp(joined(a))
        yield f"{a // 10}\tPhone\t{sha(f'app password {a}')}\t{at}\t{at}\t{a}\n"


def sessions(shape: Shape, fixed: dict[str, str]) -> Iterator[str]:
    data = fixed["session"]
    alive, expired = fixed["alive"], fixed["expired"]
    for a in range(1, shape.accounts + 1):
        # One in ten has expired: what clearsessions deletes.
        yield f"{a:040d}\t{data}\t{expired if a % 10 == 0 else alive}\n"


def outstanding_tokens(shape: Shape, fixed: dict[str, str]) -> Iterator[str]:
    alive = fixed["alive"]
    for a in range(1, shape.accounts + 1):
        yield f"{a}\tscale-token-{a}\t{stamp(joined(a))}\t{alive}\t{a}\t{a:032x}\n"


def feed_checks(shape: Shape, fixed: dict[str, str]) -> Iterator[str]:
    for f in range(shape.feeds):
        url, at, guid = feed_url(f), stamp(f), f"{f:08x}-0000-4000-8000-{f:012x}"
        yield (
            f"{f + 1}\t{feed_key(url)}\t{url}\t{at}\t{at}\tguid\t\t{guid}\t"
            f"\thttps://img.example.net/{f}.jpg\thttps://show{f}.example.net/\tShow {f}\n"
        )


def feed_episodes(shape: Shape, fixed: dict[str, str]) -> Iterator[str]:
    for f in range(shape.feeds):
        for e in range(CATALOGUE):
            guid, url = episode_guid(f, e), episode_url(f, e)
            published = stamp(86400 * (CATALOGUE - e))  # episode 0 is the newest
            yield (
                f"{f * CATALOGUE + e + 1}\t{sha('guid:' + guid)}\t{guid}\tEpisode {e} of show {f}\t"
                f"{url}\t{episode_key(url)}\t\t\t{published}\t1800\t\t{f + 1}\n"
            )


TABLES: list[tuple[str, str, Rows]] = [
    ("auth_user", "id, password, last_login, is_superuser, username, first_name, last_name, "
     "email, is_staff, is_active, date_joined", users),
    ("subscriptions_subscription", "id, guid, feed_url, is_subscribed, subscription_changed, "
     "guid_changed, deleted, created, user_id", subscriptions),
    ("subscriptions_subscriptionguid", "id, guid, assigned, subscription_id, user_id, replaced",
     subscription_guids),
    ("subscriptions_subscriptionfeed", "id, url, key_digest, assigned, subscription_id, user_id",
     subscription_feeds),
    ("gpodder_device", "id, device_id, caption, type, created, last_used, user_id, pulled_up_to",
     devices),
    ("gpodder_devicefeed", "id, url, sent, device_id, feed_id", device_feeds),
    ("nextcloud_actionsread", "device_id, up_to", actions_read),
    ("episodes_receivedclock", "user_id, second, used", received_clocks),
    ("episodes_episodeaction", "id, podcast, podcast_key, episode, action, timestamp, received, "
     "guid, started, position, total, identity, device_id, user_id, episode_key",
     episode_actions),
    ("deletions_deletion", "id, guid, status, message, requested, finished, attempts, sends, "
     "last_sent, subscription_id, user_id", deletions),
    ("accounts_apppassword", "id, name, digest, created, last_used, user_id", app_passwords),
    ("django_session", "session_key, session_data, expire_date", sessions),
    ("token_blacklist_outstandingtoken", "id, token, created_at, expires_at, user_id, jti",
     outstanding_tokens),
    ("feedchecks_feedcheck", "id, key_digest, url, claimed, checked, result, error, guid, "
     "new_url, image_url, link, title", feed_checks),
    ("feedchecks_feedepisode", "id, item_key, guid, title, url, url_key, earlier_url_key, link, "
     "published, duration, image_url, feed_id", feed_episodes),
]  # fmt: skip


def fixed_values() -> dict[str, str]:
    """What every account shares: a password hash (the one `PASSWORD` gives, made once: hashing a
    million would take hours), an empty session, expiry times."""
    from django.contrib.auth.hashers import make_password
    from django.contrib.sessions.backends.db import SessionStore

    now = datetime.now(UTC)
    return {
        "password": make_password(PASSWORD),
        "session": SessionStore().encode({}),
        "alive": (now + timedelta(days=14)).isoformat(sep=" "),
        "expired": (now - timedelta(days=1)).isoformat(sep=" "),
    }


PASSWORD = "scale-password-long-enough"


# --- loading -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Loaded:
    table: str
    rows: int
    seconds: float


def _dropped_indexes(cur: psycopg.Cursor[Any], table: str) -> list[str]:
    """Drop `table`'s secondary indexes and unique constraints; return the statements that make
    them again, exactly as they were."""
    cur.execute(
        """
        SELECT c.relname, pg_get_indexdef(i.indexrelid), con.conname,
               pg_get_constraintdef(con.oid)
        FROM pg_index i
        JOIN pg_class c ON c.oid = i.indexrelid
        LEFT JOIN pg_constraint con ON con.conindid = i.indexrelid AND con.contype = 'u'
        WHERE i.indrelid = %s::regclass AND NOT i.indisprimary
        """,
        [table],
    )
    again = []
    for index, index_sql, constraint, constraint_sql in cur.fetchall():
        if constraint:
            cur.execute(f'ALTER TABLE {table} DROP CONSTRAINT "{constraint}"')
            again.append(f'ALTER TABLE {table} ADD CONSTRAINT "{constraint}" {constraint_sql}')
        else:
            cur.execute(f'DROP INDEX "{index}"')
            again.append(index_sql)
    return again


def _copy(
    cur: psycopg.Cursor[Any], table: str, columns: str, lines: Iterator[str], total: int
) -> None:
    with (
        cur.copy(f"COPY {table} ({columns}) FROM STDIN") as copy,
        tqdm(total=total, desc=f"{table:<34}", unit=" rows", unit_scale=True, mininterval=2,
             file=sys.stdout, ascii=True) as bar,
    ):  # fmt: skip
        chunk: list[str] = []
        for line in lines:
            chunk.append(line)
            if len(chunk) == 20_000:
                copy.write("".join(chunk))
                bar.update(len(chunk))
                chunk.clear()
        copy.write("".join(chunk))
        bar.update(len(chunk))


def load(dsn: str, shape: Shape) -> list[Loaded]:
    """Fill the (migrated, empty) database at `dsn` with `shape`'s accounts and feeds; return
    each table's rows and seconds (its COPY, then the build of its indexes)."""
    fixed = fixed_values()
    expected = shape.rows()
    took: dict[str, float] = {}
    rebuild: list[tuple[str, list[str]]] = []
    with psycopg.connect(dsn, autocommit=True) as conn, conn.cursor() as cur:
        cur.execute("SET session_replication_role = replica")  # no foreign-key triggers
        for table, columns, rows in TABLES:
            start = time.monotonic()
            with conn.transaction():
                again = _dropped_indexes(cur, table)
                _copy(cur, table, columns, rows(shape, fixed), expected[table])
            rebuild.append((table, again))
            took[table] = time.monotonic() - start
        cur.execute("SET session_replication_role = DEFAULT")
        for table, again in tqdm(
            rebuild, desc="indexes and constraints", file=sys.stdout, ascii=True
        ):
            start = time.monotonic()
            for statement in again:
                cur.execute(statement)
            cur.execute(
                "SELECT a.attname FROM pg_attribute a WHERE a.attrelid = %s::regclass "
                "AND a.attidentity <> '' ",
                [table],
            )
            for (column,) in cur.fetchall():
                cur.execute(
                    f"SELECT setval(pg_get_serial_sequence(%s, %s), "
                    f"(SELECT coalesce(max({column}), 0) + 1 FROM {table}), false)",
                    [table, column],
                )
            took[table] += time.monotonic() - start
        for table, _, _ in tqdm(TABLES, desc="vacuum analyze", file=sys.stdout, ascii=True):
            start = time.monotonic()
            cur.execute(f"VACUUM (ANALYZE) {table}")
            took[table] += time.monotonic() - start
    return [Loaded(table, expected[table], took[table]) for table, _, _ in TABLES]


def sizes(dsn: str) -> list[tuple[str, str, int]]:
    """(table, index or "" for the table's own heap and TOAST, bytes) of every loaded table."""
    names = [table for table, _, _ in TABLES]
    with psycopg.connect(dsn) as conn:
        heaps = conn.execute(
            "SELECT relname, '', pg_table_size(oid) FROM pg_class WHERE relname = ANY(%s)",
            [names],
        ).fetchall()
        indexes = conn.execute(
            "SELECT t.relname, i.relname, pg_relation_size(i.oid) FROM pg_index x "
            "JOIN pg_class t ON t.oid = x.indrelid JOIN pg_class i ON i.oid = x.indexrelid "
            "WHERE t.relname = ANY(%s)",
            [names],
        ).fetchall()
    order = {name: n for n, name in enumerate(names)}
    return sorted(heaps + indexes, key=lambda r: (order[r[0]], r[1] != "", -r[2]))
