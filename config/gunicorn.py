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
# Each worker listens on a socket of its own (SO_REUSEPORT), and the kernel spreads connections
# over them. On one shared socket, the worker that woke first took most of a few kept-alive
# connections (a proxy's, a benchmark's): now and then one worker of four served all eight
# while the others idled. A worker that stops drops what still waits in its own queue, unless
# the kernel hands it on (sysctl net.ipv4.tcp_migrate_req=1, Linux 5.14 and later).
reuse_port = os.environ.get("GUNICORN_REUSE_PORT", "true").lower() not in ("0", "false", "no")
timeout = 30
graceful_timeout = 30
# Load the application once in the master, so workers share its memory and start at once.
preload_app = True
