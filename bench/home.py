"""The home server (`manage.py serve`, docs/self-hosting.md): how soon it serves after a start on
a warm venv, how AntennaPod's sync load (bench/apps.py) runs on its SQLite, and the memory of its
whole process tree after that load (bench/README.md, "The home server"); and, alone as
`BENCH_ONLY=footprint`, each process's memory at rest and a command's start (bench/README.md,
"Footprint")."""

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil

from bench import apps
from bench.harness import add_users

ROOT = Path(__file__).resolve().parents[1]
PASSWORD = "bench home server password 7"
RSS_TARGET_MB = 150.0
REST_TARGET_MB = 100.0
COMMAND_TARGET_S = 2.0
START_TARGET_S = 10.0
SETTLE_S = 35.0


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# The settings the bench may run the home server with (bench.peers' variants), passed on.
SETTINGS_KEPT = ("FAST_PATH", "SYNC_NOTES_AFTER_ANSWER")


def server_env(data: Path, port: int) -> dict[str, str]:
    """A person's shell, with the data folder and port of this run (and SETTINGS_KEPT, when
    the bench sets them)."""
    kept = ("PATH", "HOME", "LANG", *SETTINGS_KEPT)
    return {
        **{name: os.environ[name] for name in kept if name in os.environ},
        "DATA_DIR": str(data),
        "PORT": str(port),
        # As the PostgreSQL figures are measured: the per-user throttle runs, but never says no
        # to the four devices of one user the load runs at full speed.
        "THROTTLE_USER_RATE": "100000000/min",
    }


@contextlib.contextmanager
def serving(data: Path, port: int, log: Path) -> Iterator[tuple[psutil.Process, float]]:
    """The home server started as `make run` starts it: its process, and seconds to serving."""
    started = time.monotonic()
    with open(log, "ab") as out:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "serve"],
            cwd=ROOT, env=server_env(data, port), stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    try:
        while not _healthy(port):
            if process.poll() is not None:
                raise RuntimeError(f"the home server stopped: see {log}")
            if time.monotonic() - started > 120:
                raise RuntimeError(f"the home server did not answer in 120 s: see {log}")
            time.sleep(0.05)
        yield psutil.Process(process.pid), time.monotonic() - started
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=60)


def _healthy(port: int) -> bool:
    url = f"http://127.0.0.1:{port}/health"
    with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=2) as answer:
        return bool(answer.status == 200)
    return False


def tree_memory_mb(process: psutil.Process) -> tuple[float, float]:
    """The RSS and the PSS (shared pages split between the processes that share them) of a
    process and its children, in MB."""
    rss = pss = 0.0
    for member in [process, *process.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            full = member.memory_full_info()
            rss += full.rss
            pss += getattr(full, "pss", full.rss)
    return rss / 1e6, pss / 1e6


def bench_home(row: Callable[..., None]) -> None:
    print("The home server: manage.py serve on SQLite, tasks in-process (bench/home.py)")
    data = Path(tempfile.mkdtemp(prefix="opa-home-")) / "data"
    port = _free_port()
    log = data.parent / "serve.log"
    with serving(data, port, log) as (_, first):
        pass
    add_users(server_env(data, port), ("apps1", "apps4"), PASSWORD)
    with serving(data, port, log) as (server, warm):
        row("home server: first start to serving (migrations, static files)", f"{first:.1f} s")
        row("home server: start to serving, warm venv", f"{warm:.1f} s", f"<= {START_TARGET_S:g} s")
        idle_rss, idle_pss = tree_memory_mb(server)
        row("home server: memory at rest", f"RSS {idle_rss:.0f} MB (PSS {idle_pss:.0f} MB)")
        for count in (1, 4):
            summary = apps.run(f"http://127.0.0.1:{port}", f"apps{count}", PASSWORD, apps=count)
            bad = summary.not_200 or summary.failed or summary.missing
            row(
                f"home server: apps, {count} device(s), SQLite",
                f"rounds {summary.ok_per_s:.0f} ok/s, p50 {summary.request_p50_ms:.2f} ms a "
                f"request; not 200: {summary.not_200}; missed: {summary.missing}"
                + (f"; FAILED: {summary.failed}" if summary.failed else ""),
                "no answer but 200, nothing missed" + (" (NOT MET)" if bad else ""),
            )
        rss, pss = tree_memory_mb(server)
        row("home server: memory right after the load", f"RSS {rss:.0f} MB (PSS {pss:.0f} MB)")
        time.sleep(SETTLE_S)  # the schedule hands freed memory back every 30 s (home.scheduler)
        rss, pss = tree_memory_mb(server)
        met = "" if rss <= RSS_TARGET_MB else " (NOT MET)"
        row(
            f"home server: memory of the whole process tree after the load (+{SETTLE_S:g} s)",
            f"RSS {rss:.0f} MB (PSS {pss:.0f} MB)",
            f"RSS <= {RSS_TARGET_MB:g} MB{met}",
        )


def command_seconds(data: Path, *args: str, runs: int = 3) -> float:
    """The best of a few runs of `manage.py <args>` on the home layout, from exec to exit."""
    env = server_env(data, 0)  # a person's shell: bytecode written once, read after
    best = float("inf")
    for _ in range(runs):
        started = time.monotonic()
        subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True,
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        best = min(best, time.monotonic() - started)
    return best


def bench_footprint(row: Callable[..., None]) -> None:
    """Each process of the home server at rest (RSS, PSS, USS), and manage.py's start."""
    print("The home server's footprint: each process at rest, a command's start (bench/home.py)")
    data = Path(tempfile.mkdtemp(prefix="opa-footprint-")) / "data"
    port = _free_port()
    log = data.parent / "serve.log"
    with serving(data, port, log):
        pass  # the first start: migrations and static files
    with serving(data, port, log) as (server, _):
        time.sleep(3)  # the worker's schedule and threads started
        for member, name in [(server, "master"), *((c, "worker") for c in server.children())]:
            full = member.memory_full_info()
            row(
                f"home server at rest: {name}",
                f"RSS {full.rss / 1e6:.0f} MB, PSS {full.pss / 1e6:.0f} MB, "
                f"USS {full.uss / 1e6:.0f} MB",
            )
        rss, pss = tree_memory_mb(server)
        met = "" if rss <= REST_TARGET_MB else " (NOT MET)"
        row(
            "home server at rest: the whole tree",
            f"RSS {rss:.0f} MB (PSS {pss:.0f} MB)",
            f"RSS <= {REST_TARGET_MB:g} MB{met}",
        )
    for args in (("help",), ("check",)):
        seconds = command_seconds(data, *args)
        met = "" if seconds <= COMMAND_TARGET_S else " (NOT MET)"
        row(
            f"manage.py {' '.join(args)}: start to exit, best of 3",
            f"{seconds:.2f} s",
            f"<= {COMMAND_TARGET_S:g} s{met}",
        )
