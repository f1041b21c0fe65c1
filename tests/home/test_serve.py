"""`manage.py serve`, the home server's start (docs/self-hosting.md), up to the moment it becomes
gunicorn (`--no-exec`): what it prints, what it keeps in the data folder, and each fault that
stops it with one line saying what to do and nothing in the data folder changed."""

import contextlib
import hashlib
import io
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import servers

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", autouse=True)
def static_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """serve collects the static files: into a folder of this module's, not the checkout's
    staticfiles/, which tests running beside these serve their pages from while it is rewritten."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("STATIC_ROOT", str(tmp_path_factory.mktemp("static")))
        yield


def run(data: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """manage.py as a person runs it: no settings module, key or database named."""
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={
            "PATH": os.environ["PATH"],
            "STATIC_ROOT": os.environ["STATIC_ROOT"],
            "DATA_DIR": str(data),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=180,
    )


def serve(data: Path, port: int | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    return run(data, "serve", "--no-exec", "--port", str(port or servers.free_port()), **env)


def fingerprint(folder: Path) -> dict[str, str]:
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.iterdir())
        if path.is_file()
    }


def assert_one_line(done: subprocess.CompletedProcess[str], says: str) -> None:
    assert done.returncode != 0, done.stdout
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert re.search(says, lines[0]), lines[0]


@pytest.fixture(scope="module")
def started(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A data folder after a first start, and the first start's output."""
    data = tmp_path_factory.mktemp("home") / "data"
    done = serve(data)
    assert done.returncode == 0, done.stdout + done.stderr
    return data, done.stdout


def test_the_first_start_says_where_to_connect_and_the_first_password(
    started: tuple[Path, str],
) -> None:
    data, out = started
    assert re.search(r"Sign in as 'admin' with the password: \S{12,}", out)
    assert "shown only this once" in out
    assert f"Your data (database and secret key): {data}" in out
    static = Path(os.environ["STATIC_ROOT"])  # collected there, compressed but source maps
    assert (static / "staticfiles.json").is_file()
    assert list(static.glob("admin/js/*.js.gz"))
    assert list(static.glob("drf_spectacular_sidecar/**/*.map"))
    assert not list(static.glob("drf_spectacular_sidecar/**/*.map.gz"))
    assert re.search(r"http://localhost:\d+/", out)
    for address in _lan_addresses():  # on 0.0.0.0, the default: its IPv4 addresses
        assert (address in out) == (":" not in address), address
    # Every session key is in the database: nothing in the folder is another user's to read.
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    for name in ("secret_key", "db.sqlite3"):
        assert stat.S_IMODE((data / name).stat().st_mode) == 0o600, name
    copy = data.parent / "backup.sqlite3"
    done = run(data, "backup", str(copy))
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(copy.stat().st_mode) == 0o600


def test_a_later_start_keeps_the_key_and_says_how_to_reset_the_password(
    started: tuple[Path, str],
) -> None:
    data, _ = started
    key = (data / "secret_key").read_text()
    done = serve(data)
    assert done.returncode == 0, done.stderr
    assert "with the password" not in done.stdout
    assert "Forgot the 'admin' password?" in done.stdout
    assert "manage.py changepassword admin" in done.stdout
    assert (data / "secret_key").read_text() == key


def test_every_manage_command_works_afterwards_with_no_environment(
    started: tuple[Path, str],
) -> None:
    data, _ = started
    counted = run(
        data,
        "shell",
        "-c",
        "from django.contrib.auth.models import User; "
        "print(User.objects.filter(is_staff=True).count())",
    )
    assert counted.returncode == 0, counted.stderr
    assert counted.stdout.strip().splitlines()[-1] == "1"
    exported = run(data, "export_opml", "admin", "--no-progress")
    assert exported.returncode == 0, exported.stderr
    assert "<opml" in exported.stdout
    assert run(data, "check").returncode == 0


def test_a_port_in_use_stops_the_start(started: tuple[Path, str]) -> None:
    data, _ = started
    before = fingerprint(data)
    with socket.socket() as holder:
        holder.bind(("0.0.0.0", 0))
        holder.listen()
        port = holder.getsockname()[1]
        done = serve(data, port)
    assert_one_line(done, rf"Port {port} is in use: stop what uses it, or start with PORT=")
    assert fingerprint(data) == before


def test_a_database_that_does_not_answer_stops_the_start(tmp_path: Path) -> None:
    done = serve(
        tmp_path,
        DATABASE_URL=f"postgres://opa@127.0.0.1:{servers.free_port()}/opa",
        SECRET_KEY="a-key-for-this-test-only-0123456789-0123456789",
    )
    assert_one_line(done, r"The database does not answer.*: start it, or check DATABASE_URL")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        (lambda key: key.unlink(), r"secret_key is missing but .*db.sqlite3 exists: restore"),
        (lambda key: key.write_text(""), r"secret_key is empty: restore"),
        (lambda key: (key.unlink(), key.mkdir()), r"Cannot read .*secret_key"),
    ],
    ids=["missing", "empty", "unreadable"],
)
def test_a_lost_or_broken_key_stops_the_start(
    tmp_path: Path, started: tuple[Path, str], damage: object, says: str
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "db.sqlite3").write_bytes((started[0] / "db.sqlite3").read_bytes())
    key = data / "secret_key"
    key.write_text("a key")
    damage(key)  # type: ignore[operator]
    before = fingerprint(data)
    assert_one_line(serve(data), says)
    assert fingerprint(data) == before


@contextlib.contextmanager
def mounted(*command: str) -> Iterator[None]:
    subprocess.run(["mount", *command], check=True, capture_output=True)
    try:
        yield
    finally:
        subprocess.run(["umount", command[-1]], check=True, capture_output=True)


def test_a_read_only_data_folder_stops_the_start(tmp_path: Path, started: tuple[Path, str]) -> None:
    data = tmp_path / "data"
    data.mkdir()
    for name in ("db.sqlite3", "secret_key"):
        (data / name).write_bytes((started[0] / name).read_bytes())
    before = fingerprint(data)
    with mounted("--bind", "-o", "ro", str(data), str(data)):
        assert_one_line(serve(data), rf"Cannot write in {data} \(Read-only file system\)")
    assert fingerprint(data) == before


def test_a_full_data_folder_stops_the_start(tmp_path: Path, started: tuple[Path, str]) -> None:
    data = tmp_path / "data"
    data.mkdir()
    size = (started[0] / "db.sqlite3").stat().st_size + 64 * 1024
    with mounted("-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(data)):
        for name in ("db.sqlite3", "secret_key"):
            (data / name).write_bytes((started[0] / name).read_bytes())
        filler = data / "filler"
        with contextlib.suppress(OSError), open(filler, "wb") as file:
            while True:
                file.write(b"\0" * 4096)
                file.flush()
        filler_size = filler.stat().st_size
        before = fingerprint(data)
        assert_one_line(serve(data), rf"Cannot write in {data} \(it is full\)")
        assert fingerprint(data) == before
        assert filler.stat().st_size == filler_size


# Another user than root, as the systemd unit's `podsync`: the interpreter here lives under
# /root (mode 700), so that user keeps the right to read everything (CAP_DAC_READ_SEARCH) and
# nothing more: writing in what root owns is refused, as for any user.
AS_NOBODY = [
    "setpriv",
    "--reuid=65534",
    "--regid=65534",
    "--clear-groups",
    "--inh-caps=+dac_read_search",
    "--ambient-caps=+dac_read_search",
]


def serve_as_nobody(data: Path, static: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*AS_NOBODY, sys.executable, "manage.py", "serve", "--no-exec"],
        cwd=ROOT,
        env={
            "PATH": os.environ["PATH"],
            "STATIC_ROOT": str(static),
            "DATA_DIR": str(data),
            "PORT": str(servers.free_port()),
        },
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_a_tree_a_first_try_as_root_left_is_named_with_the_chown_to_run(tmp_path: Path) -> None:
    """`make run` as root first, then the unit as its own user: the static files root collected
    (and a data folder root made) stop the start with one line giving the command that fixes
    it, not a traceback every 5 s."""
    tmp_path.chmod(0o755)
    data, static = tmp_path / "data", tmp_path / "static"
    first = subprocess.run(
        [sys.executable, "manage.py", "serve", "--no-exec", "--port", str(servers.free_port())],
        cwd=ROOT,
        env={"PATH": os.environ["PATH"], "STATIC_ROOT": str(static), "DATA_DIR": str(data)},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert first.returncode == 0, first.stderr
    (static / ".sources").write_text("an older release's files")  # an upgrade since
    assert_one_line(
        serve_as_nobody(data, static),
        rf"^CommandError: Cannot write in {data}, which is root's, and this start runs as"
        rf" nobody: sudo chown -R nobody:nogroup {data}$",
    )
    shutil.chown(data, "nobody", "nogroup")
    for path in data.iterdir():
        shutil.chown(path, "nobody", "nogroup")
    assert_one_line(
        serve_as_nobody(data, static),
        rf"^CommandError: Cannot write in {static}, which is root's, and this start runs as"
        rf" nobody: sudo chown -R nobody:nogroup {static}$",
    )
    subprocess.run(["chown", "-R", "nobody:nogroup", str(static)], check=True)
    done = serve_as_nobody(data, static)
    assert done.returncode == 0, done.stderr
    assert "Forgot the 'admin' password?" in done.stdout


def _lan_addresses() -> list[str]:
    from home.environment import lan_addresses

    return lan_addresses()


def test_the_start_names_the_admins_address_on_the_first_address(
    started: tuple[Path, str],
) -> None:
    """Where staff add the people of the household: the first address apps are given."""
    _, out = started
    first = re.search(r"server's address is one of these:\n\s+(http://\S+)", out)
    assert first, out
    people = f"{first.group(1)}/admin/people/"
    assert f"Add the people of your household, signed in as 'admin': {people}" in out
    from home.environment import route_address

    assert first.group(1).startswith(f"http://{route_address()}:")  # not a container's bridge


def test_in_a_container_the_start_names_no_address_of_its_own(tmp_path: Path) -> None:
    """A container's addresses and name are its own, which no phone reaches, and the port
    published on the host is not seen from inside: the start says so rather than guess."""
    done = serve(tmp_path / "data", 8123, IN_CONTAINER="true")
    assert done.returncode == 0, done.stderr
    printed = done.stdout
    assert "this machine's name or address, with the port published for the container's 8123" in (
        printed
    )
    assert "localhost:8" not in printed
    assert "Add the people of your household, signed in as 'admin': http://<this machine>:" in (
        printed
    )
    assert "Stop with docker stop <container name>." in printed
    for address in _lan_addresses():
        assert address not in printed
    again = serve(tmp_path / "data", 8123, IN_CONTAINER="true")
    assert (
        "Forgot the 'admin' password? docker exec -it <container name> python manage.py"
        " changepassword admin"
    ) in again.stdout


def test_under_compose_the_start_gives_composes_commands(tmp_path: Path) -> None:
    serve(tmp_path / "data", IN_CONTAINER="true", UNDER_COMPOSE="true")
    done = serve(tmp_path / "data", IN_CONTAINER="true", UNDER_COMPOSE="true")
    assert done.returncode == 0, done.stderr
    assert (
        "Forgot the 'admin' password? docker compose exec server python manage.py"
        " changepassword admin"
    ) in done.stdout
    assert "Stop with docker compose stop" in done.stdout
    assert "docker stop" not in done.stdout


def test_in_a_container_with_public_url_that_is_the_address(tmp_path: Path) -> None:
    done = serve(tmp_path / "data", IN_CONTAINER="true", PUBLIC_URL="http://mynas:8123")
    assert done.returncode == 0, done.stderr
    assert "    http://mynas:8123\n" in done.stdout
    assert "signed in as 'admin': http://mynas:8123/admin/people/" in done.stdout


def test_compose_tells_the_start_it_runs_under_compose() -> None:
    import yaml

    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    assert compose["services"]["server"]["environment"]["UNDER_COMPOSE"] == "true"


def test_only_the_addresses_it_listens_on_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On 0.0.0.0 (the default) gunicorn listens on IPv4 alone: the machine's IPv6 addresses
    would refuse a phone, so they are not named; on :: (IPv6 and IPv4) both are."""
    from home import environment
    from home.management.commands import serve as command

    monkeypatch.setattr(command, "in_container", lambda: False)
    monkeypatch.setattr(environment, "lan_addresses", lambda: ["192.168.1.50", "fd00::2"])
    named = {}
    for host in ("0.0.0.0", "::"):
        out = io.StringIO()
        command.Command(stdout=out)._tell_where(host, 8000, None, tmp_path)
        named[host] = out.getvalue()
    assert "http://192.168.1.50:8000" in named["0.0.0.0"]
    assert "fd00::2" not in named["0.0.0.0"]
    assert "http://192.168.1.50:8000" in named["::"]
    assert "http://[fd00::2]:8000" in named["::"]
