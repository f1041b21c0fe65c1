"""gunicorn settings of the home server (`manage.py serve`, docs/self-hosting.md): the full
layout's (config/gunicorn.py) for one household on a small machine.

One worker process of a few threads: SQLite takes one writer at a time anyway, and a Raspberry
Pi's memory is better spent elsewhere (bench/HISTORY.md, "The home server"). The app is loaded
in the worker, not the master, so the master stays small. The worker also keeps the schedule
that Celery beat keeps in the full layout (home.scheduler).
"""

import os
import runpy
from pathlib import Path
from typing import Any

# The full layout's settings, read from their file: importing them as config.gunicorn would load
# the config package, and with it Celery, into the master (11 MB of its 36).
globals().update(
    (name, value)
    for name, value in runpy.run_path(str(Path(__file__).with_name("gunicorn.py"))).items()
    if not name.startswith("_")
)

bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")  # a home server serves its LAN
workers = int(os.environ.get("WEB_CONCURRENCY", "1"))
threads = int(os.environ.get("WEB_THREADS", "4"))
preload_app = False
reuse_port = False  # one worker: nothing to spread, and the master binds (and names) the address


def post_worker_init(worker: Any) -> None:
    from home import scheduler

    scheduler.start()
