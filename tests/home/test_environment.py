"""The home server's own defaults (docs/self-hosting.md): its secret key, kept in the data folder
and never made again over a database that has one; the names a home network reaches it by."""

import stat
from pathlib import Path

import pytest

from home import environment
from home.environment import StartError


def test_the_first_start_makes_a_key_only_its_owner_reads_and_later_ones_read_it(
    tmp_path: Path,
) -> None:
    database = tmp_path / "db.sqlite3"
    key = environment.secret_key(tmp_path, database)
    path = tmp_path / environment.SECRET_FILE_NAME
    assert len(key) >= 50
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    database.write_bytes(b"")  # the first start made its database
    assert environment.secret_key(tmp_path, database) == key


def test_a_lost_key_beside_a_database_stops_the_start_saying_what_to_do(tmp_path: Path) -> None:
    database = tmp_path / "db.sqlite3"
    database.write_bytes(b"kept")
    with pytest.raises(StartError, match=r"is missing but .* exists: restore the key"):
        environment.secret_key(tmp_path, database)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["db.sqlite3"]
    assert database.read_bytes() == b"kept"


def test_a_new_key_is_made_beside_a_database_only_when_asked(tmp_path: Path) -> None:
    """A database of 1.0.0's `make run`, which kept no key: NEW_SECRET_KEY=true makes one."""
    database = tmp_path / "db.sqlite3"
    database.write_bytes(b"kept")
    key = environment.secret_key(tmp_path, database, new=True)
    assert (tmp_path / environment.SECRET_FILE_NAME).read_text().strip() == key
    # Asked again, the key made is kept: NEW_SECRET_KEY never replaces one.
    assert environment.secret_key(tmp_path, database, new=True) == key
    assert database.read_bytes() == b"kept"


@pytest.mark.parametrize("content", ["", "\n", "   \n"])
def test_an_empty_key_stops_the_start(tmp_path: Path, content: str) -> None:
    (tmp_path / environment.SECRET_FILE_NAME).write_text(content)
    with pytest.raises(StartError, match="is empty"):
        environment.secret_key(tmp_path, tmp_path / "db.sqlite3")
    assert (tmp_path / environment.SECRET_FILE_NAME).read_text() == content


def test_an_unreadable_key_stops_the_start(tmp_path: Path) -> None:
    (tmp_path / environment.SECRET_FILE_NAME).mkdir()  # root reads any file: a folder it cannot
    with pytest.raises(StartError, match="Cannot read"):
        environment.secret_key(tmp_path, tmp_path / "db.sqlite3")


def test_the_names_of_a_home_network_are_accepted() -> None:
    hosts = environment.home_hosts()
    for name in ("localhost", "127.0.0.1", "[::1]", ".local", ".lan", ".home.arpa"):
        assert name in hosts
    host = environment.host_name()
    assert host in hosts
    assert f"{host}.local" in hosts
    for address in environment.lan_addresses():
        assert (f"[{address}]" if ":" in address else address) in hosts
    assert "*" not in hosts


def test_a_data_folder_a_first_try_as_root_left_names_the_chown_to_run() -> None:
    """Run as root once (`make run`), the data folder and its key are root's alone: the systemd
    unit's user is told in one line what gives it the folder. A Python of the system's, which
    that user may run (the test's lives in root's home), with this one's libraries."""
    import os
    import shutil
    import subprocess
    import sys
    import tempfile

    root = Path(__file__).resolve().parents[2]
    tree = Path(tempfile.mkdtemp(dir="/tmp"))  # pytest's own folder is root's alone
    tree.chmod(0o755)
    data = tree / "data"
    environment.secret_key(data, data / "db.sqlite3")
    data.chmod(0o700)
    done = subprocess.run(
        [
            *("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"),
            *("/usr/bin/python3", "manage.py", "check"),
        ],
        cwd=root,
        env={
            "PATH": os.environ["PATH"],
            "PYTHONPATH": next(p for p in sys.path if p.endswith("site-packages")),
            "DATA_DIR": str(data),
            "PYTHONDONTWRITEBYTECODE": "1",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    shutil.rmtree(tree)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"Cannot read in {data}, which is root's, and this start runs as nobody: "
        f"sudo chown -R nobody:nogroup {data}"
    ]
