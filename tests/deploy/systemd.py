"""The units of deploy/systemd installed into a folder of the test's own, as rendered for this
checkout, and what `systemd-analyze verify` says of them (tests/deploy/test_systemd.py, and
the guide's own units in tests/docs)."""

import grp
import os
import pwd
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
UNITS = ROOT / "deploy" / "systemd"
INSTALL_DIR = "/opt/podsync"


def render(text: str, tmp: Path) -> str:
    """The unit as it would be installed on this machine, at this checkout's paths."""
    user = pwd.getpwuid(os.getuid()).pw_name
    group = grp.getgrgid(os.getgid()).gr_name
    text = text.replace(f"{INSTALL_DIR}/.venv/", f"{sys.prefix}/")  # the tests' own venv
    text = text.replace(f"{INSTALL_DIR}/", f"{ROOT}/").replace(INSTALL_DIR, str(ROOT))
    text = text.replace("/etc/podsync/", f"{tmp}/etc/").replace("/var/lib/podsync", f"{tmp}/lib")
    text = re.sub(r"^User=podsync$", f"User={user}", text, flags=re.MULTILINE)
    return re.sub(r"^Group=podsync$", f"Group={group}", text, flags=re.MULTILINE)


def install(tmp: Path, units: dict[str, str]) -> list[Path]:
    """Each unit rendered into `tmp`, beside the environment files and folders it names."""
    (tmp / "etc").mkdir(exist_ok=True)
    (tmp / "lib").mkdir(exist_ok=True)
    for example in UNITS.glob("*.env.example"):
        shutil.copy(example, tmp / "etc" / example.name.removesuffix(".example"))
    paths = []
    for name, text in units.items():
        path = tmp / name
        path.write_text(render(text, tmp))
        paths.append(path)
    return paths


def verify(systemd_analyze: str, paths: list[Path]) -> list[str]:
    """What `systemd-analyze verify` finds wrong in these units: every line it says of them (a
    mistyped key or value is only a warning, with exit status 0), and a failing exit status.
    Units they name but that are not among them (postgresql.service) are not verified."""
    result = subprocess.run(
        [systemd_analyze, "verify", "--man=no", "--recursive-errors=no", *map(str, paths)],
        cwd=paths[0].parent,
        capture_output=True,
        text=True,
        env={**os.environ, "SYSTEMD_LOG_COLOR": "0", "SYSTEMD_PAGER": ""},
        timeout=120,
    )
    names = [path.name for path in paths]
    said = (result.stdout + result.stderr).splitlines()
    problems = [line for line in said if any(name in line for name in names)]
    if result.returncode != 0:
        problems.append(f"exit status {result.returncode}: {said}")
    timers = {path.name: path for path in paths if path.suffix == ".timer"}
    for name in timers:  # verify takes a timer whose service is missing
        service = name.removesuffix(".timer") + ".service"
        if service not in names:
            problems.append(f"{name}: {service} is not among the units")
    return problems
