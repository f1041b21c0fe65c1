"""scripts/install-servers.sh (`make test`, `make bench`) never stops, starts or reconfigures a
service of the machine it runs on, which may be one that serves: it keeps Debian's packages from
starting theirs while it installs them, with a policy-rc.d of its own for that time only.

The script runs with stand-ins for apt-get and the service commands on PATH, beside a real
redis-server standing for the machine's own: a stand-in `service` or `systemctl` asked to stop
it stops it, as the real ones would stop the machine's.
"""

import os
import re
import socket
import stat
import subprocess
from pathlib import Path

import pytest

from tests import servers

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "install-servers.sh"
MISSING = "opa-test-no-such-tool"  # named as an argument, so that there is something to install

# apt-get: records its call; an install runs policy-rc.d as a package's start would
# (invoke-rc.d), and "starts" the service only when the policy allows it (anything but 101).
APT_GET = """#!/bin/sh
echo "apt-get $*" >>"$RECORD"
case " $* " in *" install "*)
  if [ -x "$POLICY_RC_D" ]; then
    "$POLICY_RC_D" redis-server start; echo "policy-rc.d: $?" >>"$RECORD"
  else
    echo "policy-rc.d: none" >>"$RECORD"
  fi
  exit "${APT_STATUS:-0}";;
esac
"""
# service, systemctl, invoke-rc.d: record; a stop or restart of anything stops "the machine's"
# redis-server.
SERVICE = """#!/bin/sh
echo "$(basename "$0") $*" >>"$RECORD"
case " $* " in *" stop "*|*" restart "*|*" force-reload "*) kill "$MACHINES_REDIS";; esac
exit 0
"""
SUDO = '#!/bin/sh\nexec "$@"\n'


def answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def stand_in(folder: Path, name: str, text: str) -> None:
    path = folder / name
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


@pytest.fixture
def machine(tmp_path):
    """A redis-server serving as the machine's own, and the stand-ins' folder on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stand_in(bin_dir, "apt-get", APT_GET)
    for name in ("service", "systemctl", "invoke-rc.d"):
        stand_in(bin_dir, name, SERVICE)
    stand_in(bin_dir, "sudo", SUDO)
    with servers.redis() as redis:
        assert redis.process is not None
        yield {
            "tmp": tmp_path,
            "redis": redis,
            "record": tmp_path / "calls",
            "policy": tmp_path / "policy-rc.d",
            "env": {
                **os.environ,
                "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
                "RECORD": str(tmp_path / "calls"),
                "POLICY_RC_D": str(tmp_path / "policy-rc.d"),
                "MACHINES_REDIS": str(redis.process.pid),
            },
        }


def run(
    machine, script: Path = SCRIPT, tool: str = MISSING, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(script), tool],
        env={**machine["env"], **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def calls(machine) -> list[str]:
    record = machine["record"]
    return record.read_text().splitlines() if record.exists() else []


def test_an_install_leaves_the_machines_running_service_alone(machine):
    assert answers(machine["redis"].port)

    result = run(machine)

    assert result.returncode == 0, result.stderr
    assert answers(machine["redis"].port)
    made = calls(machine)
    assert made[0] == "apt-get update -qq"
    assert made[1].startswith("apt-get install ")
    assert made[1].endswith(MISSING)
    assert made[2:] == ["policy-rc.d: 101"]  # no package's service started, none stopped
    assert not machine["policy"].exists()  # the policy lasted the install only


def test_the_harness_sees_a_script_that_stops_a_service(machine, tmp_path):
    """What the script did before: a stop after the install. The same run then finds the
    machine's redis-server stopped, so the test above would fail on it."""
    stopping = tmp_path / "install-servers.sh"
    stopping.write_text(SCRIPT.read_text() + "service redis-server stop || true\n")

    assert run(machine, stopping).returncode == 0
    machine["redis"].process.wait(timeout=30)

    assert not answers(machine["redis"].port)
    assert "service redis-server stop" in calls(machine)
    machine["redis"].process = None  # stopped already


def test_a_policy_the_machine_has_is_kept_as_it_is(machine):
    own = "#!/bin/sh\n# the machine's own\nexit 0\n"
    machine["policy"].write_text(own)
    machine["policy"].chmod(0o755)

    result = run(machine)

    assert result.returncode == 0, result.stderr
    assert machine["policy"].read_text() == own
    assert "policy-rc.d: 0" in calls(machine)  # its answer, not the script's
    assert answers(machine["redis"].port)


def test_a_failed_install_still_removes_the_policy(machine):
    result = run(machine, APT_STATUS="100")

    assert result.returncode != 0
    assert "policy-rc.d: 101" in calls(machine)
    assert not machine["policy"].exists()
    assert answers(machine["redis"].port)


def test_php_is_installed_with_its_sqlite_module_and_php_fpm(machine):
    """make bench's oPodSync needs PHP's SQLite module and php-fpm besides the php command: a
    PHP without the module gets the three packages."""
    stand_in(machine["tmp"] / "bin", "php", "#!/bin/sh\necho Core\necho json\n")

    result = run(machine, tool="php")

    assert result.returncode == 0, result.stderr
    assert calls(machine)[1].endswith(" php-cli php-sqlite3 php-fpm")


def test_the_script_names_no_service_command():
    text = "\n".join(
        line for line in SCRIPT.read_text().splitlines() if not line.lstrip().startswith("#")
    )

    assert not re.search(r"\bservice\s+\S+\s+(stop|start|restart|reload)", text)
    assert not re.search(r"\bsystemctl\b", text)
    assert not re.search(r"\binvoke-rc\.d\b", text)
    assert "exit 101" in text
