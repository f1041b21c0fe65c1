"""gunicorn settings for production: `gunicorn -c config/gunicorn.py config.wsgi`.

Each may be overridden from the environment or the command line. `make bench` serves both the
service and its floor with exactly these.
"""

import multiprocessing
import os

bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
# Requests are short and wait on PostgreSQL: a few processes per core keep the cores busy.
workers = int(os.environ.get("WEB_CONCURRENCY", multiprocessing.cpu_count() * 2))
worker_class = "gthread"  # threads keep client connections alive, which sync workers cannot
threads = int(os.environ.get("WEB_THREADS", "2"))
keepalive = 5
timeout = 30
graceful_timeout = 30
# Load the application once in the master, so workers share its memory and start at once.
preload_app = True
