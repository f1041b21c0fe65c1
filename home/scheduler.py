"""What Celery beat does in the full layout, done by a thread of the home server's web process
(docs/self-hosting.md): the deletion sweep every DELETION_SWEEP_INTERVAL seconds, the feeds whose
fetch failed checked again every FEED_RETRY_SWEEP_INTERVAL, the mail not sent yet tried again
every MAIL_SWEEP_INTERVAL (with EMAIL_URL), the idle accounts warned and suspended every
INACTIVITY_SWEEP_INTERVAL (with INACTIVE_ACCOUNT_DAYS), and once a day the expired sessions
and refresh tokens cleared; and, every 30 s, the memory the allocator keeps freed handed back."""

import ctypes
import ctypes.util
import logging
import threading
import time
from collections.abc import Callable

from django.conf import settings
from django.core.management import call_command
from django.db import connection

from deletions.services import deletion_sweep
from feedchecks.services import feed_checks_retry
from inactivity.services import inactive_accounts_sweep
from mail.services import mail_sweep

logger = logging.getLogger(__name__)

DAY = 24 * 3600.0

_started = threading.Lock()
_thread: threading.Thread | None = None


def _clear_expired() -> None:
    call_command("clearsessions")
    call_command("flushexpiredtokens")


def _give_back_memory() -> None:
    """Hand the heap's free pages back to the system. A sync of thousands of actions leaves
    tens of MB freed but kept by glibc's allocator, which a Raspberry Pi's other programs could
    use (bench/HISTORY.md, "The home server"); trimming takes a few milliseconds."""
    if _libc is not None:
        _libc.malloc_trim(0)


def _glibc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim  # noqa: B018 - glibc's; another C library has none
    except (OSError, AttributeError):
        return None
    return libc


_libc = _glibc()


def jobs() -> list[tuple[str, float, Callable[[], object]]]:
    """Each job's name, its period in seconds, and what it runs."""
    scheduled: list[tuple[str, float, Callable[[], object]]] = [
        ("deletion sweep", settings.DELETION_SWEEP_INTERVAL, deletion_sweep),
        ("failed feeds retried", settings.FEED_RETRY_SWEEP_INTERVAL, feed_checks_retry),
        ("expired sessions and tokens", DAY, _clear_expired),
        ("memory given back", 30.0, _give_back_memory),
    ]
    if settings.MAIL_ENABLED:
        scheduled.append(("mail sweep", settings.MAIL_SWEEP_INTERVAL, mail_sweep))
    if settings.INACTIVE_ACCOUNT_DAYS:
        sweep = inactive_accounts_sweep
        scheduled.append(("inactive accounts sweep", settings.INACTIVITY_SWEEP_INTERVAL, sweep))
    return scheduled


def _run(name: str, job: Callable[[], object]) -> None:
    try:
        job()
    except Exception:  # one failed run must not end the schedule: the next one tries again
        logger.exception("The %s failed", name)
    finally:
        connection.close()  # this thread's own connection, never held between runs


def _loop(stop: threading.Event) -> None:
    due = {name: time.monotonic() for name, _, _ in jobs()}
    while not stop.is_set():
        now = time.monotonic()
        for name, period, job in jobs():
            if now >= due[name]:
                _run(name, job)
                due[name] = time.monotonic() + period
        stop.wait(max(0.5, min(due.values()) - time.monotonic()))


def start(stop: threading.Event | None = None) -> threading.Thread:
    """Start the schedule in a daemon thread of this process, once however often called."""
    global _thread
    with _started:
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(
                target=_loop, args=(stop or threading.Event(),), name="home-schedule", daemon=True
            )
            _thread.start()
        return _thread
