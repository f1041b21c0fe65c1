"""Start the home server (docs/self-hosting.md): check what would stop it, bring the database up
to date, make the first staff account, say where to reach it, then become gunicorn.

Each fault a person can meet here (the data folder read-only or full, the port taken, the
database away) stops the start with one line saying what to do, before anything is written.
"""

import contextlib
import errno
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from accounts.selectors import USERNAME_TAKEN
from accounts.services import staff_ensure
from core.exceptions import InvalidInput
from deletions.services import deletion_sweep
from home.environment import in_container, not_ours, reachable_hosts
from home.management.commands.wait_for import database_problem
from home.static import collect_static

ROOT = Path(__file__).resolve().parents[3]
GUNICORN_CONFIG = ROOT / "config" / "gunicorn_home.py"
STAFF = "admin"
# Where staff add the people of the household, printed at each start: the People page, which
# makes each an account with a one-time password to hand over (docs/self-hosting.md).
PEOPLE_PATH = "/admin/people/"


class Command(BaseCommand):
    help = "Start the home server: migrate, make the first staff account, and serve on the LAN."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--host",
            default=os.environ.get("HOST", "0.0.0.0"),  # a home server serves its LAN
            help="The address to listen on (HOST; every interface by default).",
        )
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        parser.add_argument(
            "--wait",
            type=float,
            default=float(os.environ.get("DATABASE_WAIT", "0")),
            help="Seconds to wait for a database that does not answer yet (a container's).",
        )
        parser.add_argument(
            "--no-exec", action="store_true", help="Prepare and print, but do not serve (tests)."
        )

    def handle(self, *args: Any, host: str, port: int, wait: float, **options: Any) -> None:
        data_dir = Path(settings.DATA_DIR)
        # The database holds every session key: what this process and gunicorn, which it
        # becomes, create (the database, its journal, a backup) is the owner's alone.
        os.umask(0o077)
        if settings.DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
            _check_writable(data_dir)
            _keep_private(data_dir)
        _check_port(host, port)
        self._wait_for_database(wait)
        call_command("migrate", interactive=False, verbosity=0)
        try:
            collect_static()
        except PermissionError:  # a first start as root (make run) left them root's
            raise CommandError(not_ours(Path(settings.STATIC_ROOT))) from None
        swept = deletion_sweep(resend_after=0)  # deletions a stop cut short go on now
        if swept["resent"]:
            self.stdout.write(f"Deletions taken up again: {swept['resent']}")
        password = self._first_staff()
        self._tell_where(host, port, password, data_dir)
        connections.close_all()
        if options["no_exec"]:
            return
        os.environ["GUNICORN_BIND"] = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        # glibc gives each thread that allocates an arena of its own, which the worker's threads
        # keep: two hold the home server within its memory (bench/HISTORY.md, "The home server").
        os.environ.setdefault("MALLOC_ARENA_MAX", "2")
        sys.stdout.flush()
        command = [
            sys.executable,
            "-m",
            "gunicorn",
            "--chdir",
            str(ROOT),
            "-c",
            str(GUNICORN_CONFIG),
        ]
        command.append("config.wsgi")
        os.execv(sys.executable, command)

    def _wait_for_database(self, wait: float) -> None:
        """Until the database answers, for at most `wait` seconds; then one line saying so."""
        deadline = time.monotonic() + wait
        told = False
        while (reason := database_problem()) is not None:
            if time.monotonic() >= deadline:
                raise CommandError(
                    f"The database does not answer ({reason}): start it, or check DATABASE_URL"
                )
            if not told:
                self.stdout.write("Waiting for the database...")
                told = True
            time.sleep(min(2.0, max(0.1, deadline - time.monotonic())))

    def _first_staff(self) -> str | None:
        try:
            return staff_ensure(username=STAFF)
        except InvalidInput:  # an account has that name, in some case, but is not staff
            raise CommandError(
                f"{USERNAME_TAKEN}: make a staff account with manage.py createsuperuser"
            ) from None

    def _tell_where(self, host: str, port: int, password: str | None, data_dir: Path) -> None:
        everywhere = host in ("0.0.0.0", "::", "")
        urls = [_url(found, port) for found in reachable_hosts(host)]
        if settings.PUBLIC_URL:  # behind a proxy, that is the one address apps are given
            urls = [settings.PUBLIC_URL]
        container = in_container()
        compose = container and os.environ.get("UNDER_COMPOSE", "").lower() in ("1", "true")
        lines = ["", "  The podcast sync server is starting."]
        if container and not settings.PUBLIC_URL:
            # The port published on the host (-p 8123:8000, PODSYNC_PORT) is not seen from here.
            lines.append(
                "  In your apps, the server's address is this machine's name or address, with the"
                f" port published for the container's {port}: http://<this machine>:<that port>"
                " (set PUBLIC_URL to it, and it is shown here and on the Connect page)."
            )
            people = "http://<this machine>:<that port>" + PEOPLE_PATH
        else:
            if urls:
                lines.append("  In your apps, the server's address is one of these:")
                lines += [f"    {url}" for url in urls]
            local = _url("localhost" if everywhere else host, port)
            lines.append(f"  On this machine: {local}/")
            people = (urls[0] if urls else local) + PEOPLE_PATH
        lines.append(f"  Add the people of your household, signed in as '{STAFF}': {people}")
        manage = (
            "docker compose exec server python manage.py"
            if compose
            else "docker exec -it <container name> python manage.py"
            if container
            else _manage()
        )
        if password is not None:
            lines.append(f"  Sign in as '{STAFF}' with the password: {password}")
            lines.append("  (shown only this once: note it now)")
        else:
            lines.append(f"  Forgot the '{STAFF}' password? {manage} changepassword {STAFF}")
        if container:
            lines.append(f"  Your data (database and secret key): the volume at {data_dir}")
        else:
            lines.append(f"  Your data (database and secret key): {data_dir}")
        if compose:
            lines.append("  Stop with docker compose stop (down also removes the container).")
        elif container:
            lines.append("  Stop with docker stop <container name>.")
        else:
            lines.append("  Stop with Ctrl+C.")
        self.stdout.write("\n".join([*lines, ""]))


def _manage() -> str:
    """How to run manage.py as this start did, for a command to copy."""
    python = Path(sys.executable)
    if python.is_relative_to(ROOT):
        python = python.relative_to(ROOT)
    return f"{python} manage.py" if Path.cwd() == ROOT else f"{python} {ROOT / 'manage.py'}"


def _url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}" + ("" if port == 80 else f":{port}")


def _check_writable(data_dir: Path) -> None:
    """The database and its journal are written in the data folder: a probe write tells now."""
    probe = data_dir / ".write-test"
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        with open(probe, "wb") as file:
            file.write(b"\0" * 65536)
            file.flush()
            os.fsync(file.fileno())
    except PermissionError:
        raise CommandError(not_ours(data_dir)) from None
    except OSError as exc:
        why = "it is full" if exc.errno == errno.ENOSPC else exc.strerror
        raise CommandError(
            f"Cannot write in {data_dir} ({why}): make it writable by this user, with free space"
        ) from None
    finally:
        with contextlib.suppress(OSError):
            probe.unlink()


def _keep_private(data_dir: Path) -> None:
    """The data folder and what is in it readable by their owner alone, as the secret key is:
    earlier releases left the database readable by every user of the machine."""
    with contextlib.suppress(OSError):  # a folder of another owner's keeps its own rules
        data_dir.chmod(0o700)
        for path in data_dir.iterdir():
            if path.is_file():
                path.chmod(0o600)


def _check_port(host: str, port: int) -> None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gunicorn binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise CommandError(
                    f"Port {port} is in use: stop what uses it, or start with PORT=<another>"
                ) from None
            raise CommandError(f"Cannot listen on {host}:{port}: {exc.strerror}") from None
