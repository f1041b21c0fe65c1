"""gunicorn settings for production: `gunicorn -c config/gunicorn.py config.wsgi`.

Each may be overridden from the environment or the command line. `make bench` serves both the
service and its floor with exactly these.
"""

import gc
import multiprocessing
import os
import runpy
import socket
from pathlib import Path
from typing import Any

# Loopback: the proxy in front, on this machine, is the only one to reach the service directly
# (docs/operations.md, "Behind a proxy"). A proxy on another host or in a container needs
# another address, and TRUSTED_PROXIES to name the proxy's (the image's default names its
# network's gateway, where a proxy on the host comes from: home.proxies).
bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
# The peers whose X-Forwarded-Proto (and kin) gunicorn believes for the request's scheme: the
# service's own TRUSTED_PROXIES, so that no other peer makes a request HTTPS through gunicorn
# either (api.middleware.TrustedProxiesMiddleware). A Unix socket's peer is always believed.
# Its default read from its file: this one is read before the repository is on sys.path.
_proxies = runpy.run_path(str(Path(__file__).resolve().parent.parent / "home" / "proxies.py"))
forwarded_allow_ips = os.environ.get("TRUSTED_PROXIES") or ",".join(
    _proxies["default_trusted_proxies"]()
)
# Only X-Forwarded-Proto, the header the service's proxy blocks set and the service itself reads
# (SECURE_PROXY_SSL_HEADER): gunicorn also believed X-Forwarded-Ssl and X-Forwarded-Protocol,
# which a proxy that does not set them passes on from the client as they came.
secure_scheme_headers = {"X-FORWARDED-PROTO": "https"}
# One access-log line per request, on the standard output beside the service's own log (where
# systemd's journal or the container's log keeps it); ACCESS_LOG=false turns it off (a proxy in
# front that logs them already). It keeps no Nextcloud poll token (nextcloud.logs).
accesslog = None if os.environ.get("ACCESS_LOG", "true").lower() in ("0", "false", "no") else "-"
access_log_format = '%(t)s %(h)s "%(r)s" %(s)s %(b)s %(M)sms "%(a)s"'
logger_class = "nextcloud.logs.AccessLogger"
# No control socket: nothing here uses gunicorn's control interface, and the system user a
# service runs as has no home folder to keep it in.
control_socket_disable = True
# Requests are short and wait on PostgreSQL: a few processes per core keep the cores busy.
workers = int(os.environ.get("WEB_CONCURRENCY", multiprocessing.cpu_count() * 2))
# gunicorn's gthread, whose threads keep client connections alive (which sync workers cannot),
# with a bound on how long a client may keep a thread waiting (core.workers): a request's head
# is read once it is all there, within CLIENT_TIMEOUT seconds of its first bytes, and so is its
# body, up to its path's limit (at 500 bytes a second past its first CLIENT_TIMEOUT); an answer
# must be taken at 4 KiB a second past its first CLIENT_TIMEOUT.
worker_class = "core.workers.ThreadWorker"
try:
    client_timeout = float(os.environ.get("CLIENT_TIMEOUT", "30"))
except ValueError:
    client_timeout = 0.0
if not (0 < client_timeout < 86_400):  # 0 would turn the sockets' bounds off
    raise SystemExit(
        "CLIENT_TIMEOUT must be a number of seconds above 0 and below a day, "
        f"not {os.environ.get('CLIENT_TIMEOUT')!r}"
    )
# Files (the static ones) written through the socket like any answer, bounded as above: Python's
# sendfile waits without a bound for a client that stopped reading.
sendfile = False
threads = int(os.environ.get("WEB_THREADS", "2"))
keepalive = 5
# Each worker listens on a socket of its own (SO_REUSEPORT), and the kernel spreads connections
# over them. On one shared socket, the worker that woke first took most of a few kept-alive
# connections (a proxy's, a benchmark's) while the others idled (bench/README.md,
# "config.gunicorn.reuse_port"). A worker that stops drops what still waits in its own queue, unless
# the kernel hands it on (sysctl net.ipv4.tcp_migrate_req=1, Linux 5.14 and later).
reuse_port = os.environ.get("GUNICORN_REUSE_PORT", "true").lower() not in ("0", "false", "no")
timeout = 30
graceful_timeout = 30
# Load the application once in the master, so workers share its memory and start at once.
preload_app = True


def pre_fork(server: Any, worker: Any) -> None:
    """What the master loaded (Django, the app) lives as long as the workers: frozen, the
    garbage collector no longer scans it in every collection of every worker (bench/README.md,
    "config.gunicorn.pre_fork"), nor writes to its memory, which the workers then keep sharing."""
    gc.freeze()


def post_fork(server: Any, worker: Any) -> None:
    worker.client_timeout = client_timeout
    # A body's limits and refusals are the service's own (api.middleware): the worker applies
    # them before any thread reads a body. Only to the service's app: the bench's floor
    # (bench/floor.py) is served with these settings too, and has no Django to ask.
    if str(getattr(server.app, "app_uri", "")).partition(":")[0] == "config.wsgi":
        worker.body_rules = "api.middleware"


def on_starting(server: Any) -> None:
    """With reuse_port the master binds nothing: each worker binds its own socket after the
    fork. So check first that every TCP address is free, and stop with the reason if not: a port
    in use would make every worker fail and be started again forever, and one held by a
    leftover server that also set SO_REUSEPORT would share its connections with it. A Unix
    socket or an inherited descriptor cannot be bound once per worker (each would unlink the
    last one's path): with one of those, the master binds one socket that the workers share.
    """
    if not server.cfg.reuse_port:
        return
    addresses = server.cfg.address
    if not all(isinstance(address, tuple) for address in addresses):
        server.cfg.set("reuse_port", False)
        server.log.info("Not a TCP address: the workers share one socket (no SO_REUSEPORT)")
        return
    for host, port in addresses:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gunicorn binds
            try:
                probe.bind((host, port))
            except OSError as exc:
                raise RuntimeError(f"Cannot listen on {host}:{port}: {exc.strerror}") from exc


def when_ready(server: Any) -> None:
    """With reuse_port gunicorn's own start line names no address (the master listens on none):
    name the addresses the workers listen on."""
    if server.cfg.reuse_port:
        addresses = ", ".join(f"http://{host}:{port}" for host, port in server.cfg.address)
        server.log.info("Listening at: %s (each worker on a socket of its own)", addresses)
