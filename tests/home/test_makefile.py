"""make's choice of Python (README.md, "Developing"): the newest supported python3.X on the PATH,
PYTHON= to name another, and one line saying what to install when there is none."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def make(*args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": path if path is not None else os.environ["PATH"], "HOME": os.environ["HOME"]}
    return subprocess.run(
        ["make", "--no-print-directory", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def ours(done: subprocess.CompletedProcess[str]) -> str:
    """What the Makefile said, without make's own closing `make: *** ... Error 1`."""
    lines = [line for line in done.stderr.splitlines() if not line.startswith("make: ***")]
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_the_newest_supported_python_on_the_path_is_picked() -> None:
    done = make("--eval", "shown:\n\t@echo PYTHON = $(PYTHON)", "shown")
    picked = done.stdout.strip()
    found = [
        f"python{v}"
        for v in ("3.13", "3.12", "3.11")
        if subprocess.run([f"python{v}", "-c", ""], capture_output=True).returncode == 0
    ]
    assert picked == f"PYTHON = {found[0]}"


def test_no_supported_python_says_what_to_install(tmp_path: Path) -> None:
    bare = tmp_path / "bin"  # make and a shell, and no Python at all
    bare.mkdir()
    for tool in ("make", "sh"):
        (bare / tool).symlink_to(shutil.which(tool) or f"/bin/{tool}")
    done = make("run", f"VENV={tmp_path / 'venv'}", path=str(bare))
    assert done.returncode != 0
    assert ours(done) == (
        "No supported Python found: install Python 3.11, 3.12 or 3.13 (or name one with PYTHON=)"
    )
    assert not (tmp_path / "venv").exists()


@pytest.mark.parametrize("version", ["3.10"])
def test_an_unsupported_python_is_refused_in_one_line(tmp_path: Path, version: str) -> None:
    found = sorted(Path.home().glob(f".pyenv/versions/{version}.*/bin/python{version}"))
    old = str(found[0]) if found else "/usr/bin/python2"  # some Python that is not 3.11 to 3.13
    done = make("run", f"PYTHON={old}", f"VENV={tmp_path / 'venv'}")
    assert done.returncode != 0
    assert ours(done).endswith("is not a supported Python: use 3.11, 3.12 or 3.13")
    assert not (tmp_path / "venv").exists()
