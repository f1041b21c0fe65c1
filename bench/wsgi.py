"""The web server, a measured choice (BENCH_ONLY=wsgi; bench/README.md, "The web server"):
AntennaPod's sync (bench/apps.py) with 1 and with 4 devices of one user on this service on
PostgreSQL, served by

- gunicorn with config/gunicorn.py, as deployed (gthread workers, two threads each);
- gunicorn with the same settings but sync workers (one request at a time, no keep-alive);
- granian, a Rust HTTP server, through the same WSGI application;
- uvicorn, through Django's ASGI application;

each with the same number of worker processes (config/gunicorn.py's), each on a new database.
"""

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import redis

from bench import apps
from bench.harness import ROOT, WORKERS, row
from bench.sync import PASSWORD, problems, service_on
from tests import servers

USER = "wsgi"


def commands(port: int) -> dict[str, list[str]]:
    python, bind = sys.executable, ["--bind", f"127.0.0.1:{port}"]
    gunicorn = [python, "-m", "gunicorn", "-c", "config/gunicorn.py", *bind]
    return {
        "gunicorn gthread (as deployed)": [*gunicorn, "config.wsgi"],
        "gunicorn sync": [*gunicorn, "--worker-class", "sync", "config.wsgi"],
        "granian (WSGI)": [
            python, "-m", "granian", "--interface", "wsgi", "--host", "127.0.0.1",
            "--port", str(port), "--workers", str(WORKERS), "--no-ws",
            "config.wsgi:application",
        ],
        "uvicorn (ASGI)": [
            python, "-m", "uvicorn", "--host", "127.0.0.1", "--port", str(port),
            "--workers", str(WORKERS), "--no-access-log", "--log-level", "warning",
            "config.asgi:application",
        ],
    }  # fmt: skip


@contextlib.contextmanager
def serving(command: list[str], env: dict[str, str], log: Path, port: int) -> Iterator[None]:
    with log.open("ab") as out:
        process = subprocess.Popen(
            command, cwd=ROOT, env={"ACCESS_LOG": "false", **env}, stdout=out,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while servers.status(port, "/health") != 200:
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError(f"{command[2]} did not start:\n{log.read_text()[-2000:]}")
            time.sleep(0.1)
        time.sleep(2)  # every worker up, not only the first to answer
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def bench_wsgi(pg: servers.Server, redis_server: servers.RedisServer, logs: Path) -> None:
    print(f"The web server: AntennaPod's sync on {WORKERS} worker processes each (bench/wsgi.py)")
    redis_url = f"redis://127.0.0.1:{redis_server.port}/7"
    for n, name in enumerate(commands(0)):
        port = servers.free_port()
        command = commands(port)[name]
        redis.Redis.from_url(redis_url).flushdb()  # nothing remembered of the last database
        env = service_on(pg, f"opa_wsgi_{n}", redis_url, users=(USER,))
        folder = Path(tempfile.mkdtemp(prefix=f"wsgi-{n}-", dir=logs))
        figures = []
        with serving(command, env, folder / "server.log", port):
            for count in (1, 4):
                print(f"  {name}, {count} app(s):", flush=True)
                summary = apps.run(f"http://127.0.0.1:{port}", USER, PASSWORD, apps=count)
                figures.append(
                    f"{summary.ok_per_s:.0f} ok/s, p50 {summary.request_p50_ms:.2f} ms"
                    f"{problems(summary)}"
                )
        row(f"web server: {name}, 1 app and 4 apps", "; ".join(figures))
