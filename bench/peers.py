"""Side by side with oPodSync (BENCH_ONLY=peers; bench/README.md, "Beside oPodSync"): AntennaPod's
sync (bench/apps.py) with 1 and with 4 devices of one user, and a phone 600 s late, on

- oPodSync under `php -S`, as its Makefile runs it, and under nginx with php-fpm, as a host runs
  it (each on SQLite, as it ships);
- this service under gunicorn on PostgreSQL with its defaults (each commit waits for the disk),
  the figure its targets are for, and again on the bench's PostgreSQL with fsync,
  synchronous_commit and full_page_writes off (not crash-safe), printed beside it unless
  BENCH_PEER_FSYNC_OFF=0;
- the home server (`manage.py serve`) on SQLite;
- for each setting of BENCH_PEER_VARIANTS (FAST_PATH=false: every request through its view,
  docs/fast-path.md), this service on the durable PostgreSQL and the home server again with it.

Each server is started afresh on an empty store for each of BENCH_PEER_RUNS runs (3), and each
ratio is printed as the median of the runs with its lowest and highest. oPodSync comes from its
source at OPODSYNC_COMMIT, cloned from OPODSYNC_REPO (its GitHub repository, or any clone of it)
into bench/out the first time; PHP, php-fpm and nginx from Debian's packages (`make bench`).
"""

import contextlib
import functools
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import redis

from bench import apps, home, profiles
from bench.harness import (
    OUT,
    Gunicorn,
    Tree,
    add_users,
    cpu_used,
    popen_tree,
    postgres_tree,
    redis_tree,
    row,
    running,
    server_cpu,
)
from bench.sync import PASSWORD, service_on
from tests import servers

OPODSYNC_COMMIT = "18095b13187756e21b9d951c8c25fdd9ffc17e05"
OPODSYNC_REPO = os.environ.get("OPODSYNC_REPO", "https://github.com/kd2org/opodsync.git")
RUNS = int(os.environ.get("BENCH_PEER_RUNS", "3"))
# "1": the first run's load of one app on this service is sampled with py-spy (bench.profiles).
PROFILE = os.environ.get("BENCH_PEER_PROFILE", "") == "1"
# "0": this service on durable PostgreSQL only, a fifth less time.
FSYNC_OFF = os.environ.get("BENCH_PEER_FSYNC_OFF", "1") != "0"
# Settings (NAME=value, comma-separated) each of which this service and the home server run
# again with, in rows of their own beside the defaults; "" none.
VARIANTS = [v for v in os.environ.get("BENCH_PEER_VARIANTS", "FAST_PATH=false").split(",") if v]
USER = "peer"
PHP_S = "oPodSync, php -S"
PHP_FPM = "oPodSync, nginx + php-fpm"
SERVICE = "this service, gunicorn + PostgreSQL (its defaults: durable)"
SERVICE_FSYNC_OFF = "this service, gunicorn + PostgreSQL with fsync off (not crash-safe)"
HOME = "home server, SQLite"
SERVICE_WITH = "this service, durable, {}"
HOME_WITH = "home server, SQLite, {}"
# The kinds of process that serve each (bench.harness.Tree's), under the names its CPU row gives
# them: the home server's processes are gunicorn too (`manage.py serve` becomes one).
OWN_PROCESSES = {
    PHP_S: {"PHP and nginx": "PHP"},
    PHP_FPM: {"PHP and nginx": "PHP and nginx"},
    SERVICE: {"service": "gunicorn", "PostgreSQL": "PostgreSQL", "Redis": "Redis"},
    SERVICE_FSYNC_OFF: {"service": "gunicorn", "PostgreSQL": "PostgreSQL", "Redis": "Redis"},
    HOME: {"service": "its gunicorn"},
}
for _variant in VARIANTS:
    OWN_PROCESSES[SERVICE_WITH.format(_variant)] = OWN_PROCESSES[SERVICE]
    OWN_PROCESSES[HOME_WITH.format(_variant)] = OWN_PROCESSES[HOME]


def _setting(variant: str) -> dict[str, str]:
    name, _, value = variant.partition("=")
    return {name: value}


# Each server: a context manager that starts it afresh and yields its URL, with USER's account,
# and the process trees that serve it, whose CPU its row counts (no other server's, idle beside).
Served = Callable[[Path], contextlib.AbstractContextManager[tuple[str, list[Tree]]]]


def opodsync_source() -> Path:
    """oPodSync's source at OPODSYNC_COMMIT, cloned the first time."""
    source = OUT / f"opodsync-{OPODSYNC_COMMIT[:7]}"
    if not (source / "server" / "index.php").exists():
        part = source.with_name(source.name + ".part")
        shutil.rmtree(part, ignore_errors=True)
        subprocess.run(["git", "clone", "--quiet", OPODSYNC_REPO, str(part)], check=True)
        subprocess.run(["git", "-C", str(part), "checkout", "--quiet", OPODSYNC_COMMIT], check=True)
        part.rename(source)
    return source


@contextlib.contextmanager
def started(
    command: list[str], log: Path, cwd: Path | None = None, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    with open(log, "ab") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=cwd, env=env)
    try:
        yield process
    finally:
        servers.stop(process)


def php_fpm() -> str:
    found = sorted(Path("/usr/sbin").glob("php-fpm*"))
    if not found:
        raise RuntimeError("php-fpm is not installed: `make bench` installs it (apt-get)")
    return str(found[-1])


@contextlib.contextmanager
def opodsync(folder: Path, fpm: bool) -> Iterator[tuple[str, list[Tree]]]:
    """oPodSync on a new data folder, with USER's account: under `php -S`, or nginx + php-fpm."""
    source, data, port = opodsync_source(), folder / "data", servers.free_port()
    data.mkdir(parents=True)
    env = {**os.environ, "DATA_ROOT": str(data)}
    trees: list[Tree] = []
    with contextlib.ExitStack() as stack:
        if fpm:
            fpm_address = f"127.0.0.1:{servers.free_port()}"
            (folder / "php-fpm.conf").write_text(
                f"[global]\nerror_log = {folder}/php-fpm.log\ndaemonize = no\n"
                f"[www]\nlisten = {fpm_address}\nclear_env = no\n"
                f"pm = static\npm.max_children = {2 * (os.cpu_count() or 1)}\n"
            )
            (folder / "nginx.conf").write_text(
                # As root, its workers would otherwise run as nobody, who cannot enter the folder.
                ("user root;\n" if os.geteuid() == 0 else "")
                + f"daemon off;\nworker_processes auto;\npid {folder}/nginx.pid;\n"
                f"error_log {folder}/nginx-error.log;\nevents {{}}\nhttp {{\n"
                f"  access_log off;\n  client_body_temp_path {folder}/body;\n"
                f"  fastcgi_temp_path {folder}/fastcgi;\n"
                f"  server {{\n    listen 127.0.0.1:{port};\n    root {source}/server;\n"
                # Its address comes from SERVER_NAME, which is empty without a server_name.
                "    server_name 127.0.0.1;\n"
                # The rules of its .htaccess: every path not a file goes to index.php.
                "    location / { try_files $uri /index.php$is_args$args; }\n"
                "    location ~ \\.php$ {\n      include /etc/nginx/fastcgi_params;\n"
                "      fastcgi_param SCRIPT_FILENAME $document_root$fastcgi_script_name;\n"
                f"      fastcgi_pass {fpm_address};\n    }}\n  }}\n}}\n"
            )
            # -R: the bench may run as root, which php-fpm refuses for its workers otherwise.
            command = [php_fpm(), "-F", "-R", "-y", str(folder / "php-fpm.conf")]
            fpm_process = stack.enter_context(started(command, folder / "php-fpm.out", env=env))
            command = ["nginx", "-c", str(folder / "nginx.conf"), "-e", str(folder / "nginx.err")]
            nginx = stack.enter_context(started(command, folder / "nginx.out"))
            trees += [popen_tree("PHP and nginx", fpm_process), popen_tree("PHP and nginx", nginx)]
        else:
            command = ["php", "-S", f"127.0.0.1:{port}", "-t", "server", "server/index.php"]
            php = stack.enter_context(started(command, folder / "php.log", cwd=source, env=env))
            trees.append(popen_tree("PHP and nginx", php))
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while servers.status(port, "/") != 200:  # its first answer makes its database
            if time.monotonic() > deadline:
                raise RuntimeError(f"oPodSync did not answer in 30 s: see {folder}")
            time.sleep(0.1)
        # The account as its registration form makes it (password_hash), without the captcha.
        add = (
            "$db = new SQLite3(getenv('DB_FILE'));"
            "$q = $db->prepare('INSERT INTO users (name, password) VALUES (?, ?)');"
            "$q->bindValue(1, getenv('NAME')); $q->bindValue(2, password_hash(getenv('PW'),"
            " PASSWORD_DEFAULT)); $q->execute();"
        )
        subprocess.run(
            ["php", "-r", add],
            env={**env, "DB_FILE": str(data / "data.sqlite"), "NAME": USER, "PW": PASSWORD},
            check=True,
        )
        yield url, trees


@contextlib.contextmanager
def service(
    pg: servers.Server,
    redis_server: servers.RedisServer,
    folder: Path,
    profiled: bool = False,
    setting: dict[str, str] | None = None,
) -> Iterator[tuple[str, list[Tree]]]:
    """This service under gunicorn on a new database of `pg`, with USER's account; `profiled`:
    where its workers' time went while it served, printed once it is done (bench.profiles);
    `setting`: the settings it runs with beside its defaults."""
    database = f"opa_peer_{folder.name.replace('-', '_')}"
    redis_url = f"redis://127.0.0.1:{redis_server.port}/6"
    redis.Redis.from_url(redis_url).flushdb()  # nothing remembered of an earlier run's account
    env = service_on(pg, database, redis_url, users=(USER,))
    env.update(setting or {})
    app = Gunicorn("config.wsgi", env, folder / "gunicorn.log")
    samples = folder / "gil-samples.txt"
    with running(app):
        app.start()
        assert app.process is not None
        with (
            profiles.gil_samples(app.process.pid, samples) if profiled else contextlib.nullcontext()
        ):
            trees = [app.tree, postgres_tree(pg), redis_tree(redis_server)]
            yield f"http://127.0.0.1:{app.port}", trees
    if profiled:
        found = profiles.shares(samples)
        row(
            "peers: this service's web workers under one app, where the Python that holds the "
            "GIL runs (py-spy)",
            "; ".join(f"{name} {share:.0%}" for name, share in found.items()),
        )


@contextlib.contextmanager
def home_server(
    folder: Path, rss: list[float] | None = None, setting: dict[str, str] | None = None
) -> Iterator[tuple[str, list[Tree]]]:
    """The home server on a new data folder, with USER's account; `rss` is given the memory
    (MB) its processes hold once the load is done, as a Pi would have to; `setting`: the
    settings it runs with beside its defaults."""
    for name in home.SETTINGS_KEPT:  # what bench.home.server_env passes on
        os.environ.pop(name, None)
    os.environ.update(setting or {})
    port = servers.free_port()
    data = folder / "data"
    with home.serving(data, port, folder / "serve.log"):
        pass  # its first start migrates
    add_users(home.server_env(data, port), (USER,), PASSWORD)
    with home.serving(data, port, folder / "serve.log") as (process, _):
        yield f"http://127.0.0.1:{port}", [Tree("service", lambda: process.pid)]
        if rss is not None:
            held = [process, *process.children(recursive=True)]
            rss.append(sum(p.memory_info().rss for p in held) / 2**20)


class Measured:
    """One server's figures over the runs: ok/s at 1 and 4 apps, non-200s, losses, resends."""

    def __init__(self) -> None:
        self.ok: dict[int, list[float]] = {1: [], 4: []}
        self.not_200 = self.missing = self.late_lost = self.late_sent = 0
        self.redelivered: dict[int, list[int]] = {1: [], 4: []}
        self.failed: list[str] = []
        # CPU milliseconds per answered request, by kind of server process (bench.harness.
        # server_cpu), over each run's whole load: first sync, rounds and checks.
        self.cpu_ms: dict[int, dict[str, list[float]]] = {1: {}, 4: {}}

    def add_cpu(
        self, count: int, used: dict[str, float], requests: int, own: dict[str, str]
    ) -> None:
        """`own`: the kinds of process that serve this server, each under the name shown."""
        for kind, seconds in used.items():
            if kind in own and seconds > 0 and requests:
                self.cpu_ms[count].setdefault(own[kind], []).append(seconds / requests * 1000)

    def cpu_total(self, count: int) -> float:
        """The CPU milliseconds per answered request of all its kinds of process (medians)."""
        return sum(statistics.median(values) for values in self.cpu_ms[count].values())

    def described_cpu(self, count: int) -> str:
        kinds = self.cpu_ms[count]
        parts = {kind: statistics.median(values) for kind, values in sorted(kinds.items())}
        shown = " + ".join(f"{kind} {ms:.2f}" for kind, ms in parts.items())
        return f"{shown} = {sum(parts.values()):.2f} ms" if parts else "not measured"

    def clean(self) -> bool:
        return not (self.not_200 or self.missing or self.late_lost or self.failed)


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f}x ({min(values):.2f} to {max(values):.2f})"


def bench_peers(pg: servers.Server, redis_server: servers.RedisServer, logs: Path) -> None:
    """`pg` is the bench's PostgreSQL, fsync off: this service's figures against the targets run
    on a durable one started here, as a host runs it; the fast one's are printed beside them."""
    print(
        f"Beside oPodSync ({OPODSYNC_COMMIT[:7]}): AntennaPod's sync, {RUNS} runs (bench/peers.py)"
    )
    opodsync_source()
    home_rss: list[float] = []
    with servers.postgres(durable=True) as durable:
        started_afresh: dict[str, Served] = {
            PHP_S: lambda folder: opodsync(folder, fpm=False),
            PHP_FPM: lambda folder: opodsync(folder, fpm=True),
            SERVICE: lambda folder: service(
                durable,
                redis_server,
                folder,
                profiled=PROFILE and folder.name.startswith("peer-0-1-"),
            ),
            **(
                {SERVICE_FSYNC_OFF: lambda folder: service(pg, redis_server, folder)}
                if FSYNC_OFF
                else {}
            ),
            HOME: lambda folder: home_server(folder, home_rss),
        }
        for variant in VARIANTS:
            setting = _setting(variant)
            started_afresh[SERVICE_WITH.format(variant)] = functools.partial(
                service, durable, redis_server, setting=setting
            )
            started_afresh[HOME_WITH.format(variant)] = functools.partial(
                home_server, setting=setting
            )
        found = {name: Measured() for name in started_afresh}
        for run in range(RUNS):
            for name, serve in started_afresh.items():
                measured = found[name]
                for count in (1, 4):
                    folder = Path(tempfile.mkdtemp(prefix=f"peer-{run}-{count}-", dir=logs))
                    print(f"  run {run + 1}, {name}, {count} app(s):", flush=True)
                    with serve(folder) as (url, trees):
                        before = server_cpu(trees)
                        summary = apps.run(url, USER, PASSWORD, apps=count)
                        used = cpu_used(before, server_cpu(trees))
                        measured.add_cpu(count, used, summary.requests, OWN_PROCESSES[name])
                        measured.ok[count].append(summary.ok_per_s)
                        measured.redelivered[count].append(summary.redelivered)
                        measured.not_200 += summary.not_200
                        measured.missing += summary.missing
                        measured.failed += summary.failed
                        if count == 1:
                            measured.late_lost += apps.late_phone(url, USER, PASSWORD)
                            measured.late_sent += 600
    for name, measured in found.items():
        row(
            f"peers: {name}, ok/s at 1 and 4 apps (median of {RUNS})",
            f"{statistics.median(measured.ok[1]):.0f} and {statistics.median(measured.ok[4]):.0f}"
            f"; not 200: {measured.not_200}; lost: {measured.missing}; a phone 600 s late: "
            f"{measured.late_lost} of {measured.late_sent} lost; resent at 4 apps: "
            f"{statistics.median(measured.redelivered[4]):,.0f} actions"
            + (f"; FAILED: {measured.failed[:3]}" if measured.failed else ""),
        )
    for name, measured in found.items():
        row(
            f"peers: {name}, server CPU per answered request at 1 and 4 apps (median of {RUNS})",
            f"{measured.described_cpu(1)}; {measured.described_cpu(4)}",
        )
    peers = [found[PHP_S], found[PHP_FPM]]
    clean = [peer for peer in peers if peer.clean()] or peers

    def ratios(ours: Measured, theirs: list[Measured], count: int) -> list[float]:
        # Run by run, against the best of the peers in that run.
        return [
            ours.ok[count][run] / max(peer.ok[count][run] for peer in theirs) for run in range(RUNS)
        ]

    best = "the best oPodSync " + ("with no errors" if clean != peers else "(each had errors)")
    for count, target in ((1, ">= 1.2x"), (4, ">= 2x")):
        row(
            f"peers: service, PostgreSQL durable, vs {best}, {count} app(s)",
            spread(ratios(found[SERVICE], clean, count)),
            target,
        )
        if SERVICE_FSYNC_OFF in found:
            row(
                f"peers: service, PostgreSQL fsync off (not crash-safe), vs {best}, {count} app(s)",
                spread(ratios(found[SERVICE_FSYNC_OFF], clean, count)),
            )
        for variant in VARIANTS:
            row(
                f"peers: service, durable, {variant}, vs {best}, {count} app(s)",
                spread(ratios(found[SERVICE_WITH.format(variant)], clean, count)),
            )
    for count, target in ((1, ">= 1.5x"), (4, ">= 2x")):
        row(
            f"peers: home server vs oPodSync php -S, {count} app(s)",
            spread(ratios(found[HOME], [peers[0]], count)),
            target,
        )
        for variant in VARIANTS:
            row(
                f"peers: home server, {variant}, vs oPodSync php -S, {count} app(s)",
                spread(ratios(found[HOME_WITH.format(variant)], [peers[0]], count)),
            )
    php_cpu = found[PHP_S].cpu_total(1)
    for name in found:
        if name not in (PHP_S, PHP_FPM, SERVICE_FSYNC_OFF) and php_cpu:
            row(
                f"peers: {name}, server CPU per answered request at 1 app vs oPodSync php -S",
                f"{found[name].cpu_total(1) / php_cpu:.2f}x",
                "<= 1x" if name in (SERVICE, HOME) else "",
            )
    row(
        "peers: home server's memory after the load (RSS of its processes, each run and count)",
        f"median {statistics.median(home_rss):.0f} MB, most {max(home_rss):.0f} MB",
    )
    for name in found:
        if name not in (PHP_S, PHP_FPM):
            row(
                f"peers: {name}, answers not 200 and actions lost (a phone 600 s late included)",
                f"{found[name].not_200} and {found[name].missing + found[name].late_lost}",
                "0 and 0",
            )
