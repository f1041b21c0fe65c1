"""The server's version: pyproject.toml's, read without the package installed, with the
installed metadata as fallback, and the newest release of CHANGELOG.md."""

import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

from core import version

ROOT = Path(__file__).resolve().parents[2]


def project() -> dict[str, str]:
    with open(ROOT / "pyproject.toml", "rb") as file:
        return tomllib.load(file)["project"]


def test_the_version_is_pyprojects() -> None:
    assert (project()["name"], project()["version"]) == (version.NAME, version.VERSION)
    assert re.fullmatch(r"\d+\.\d+\.\d+", version.VERSION)


def test_it_is_read_from_the_source_tree_without_the_package_installed() -> None:
    """As `make run`, the container image and the systemd units run it: from the source tree.
    The process below has no distribution metadata to fall back on."""
    code = (
        "from importlib import metadata\n"
        "def missing(name): raise metadata.PackageNotFoundError(name)\n"
        "metadata.version = missing\n"
        "from core import version; print(version.VERSION)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip() == project()["version"]


def test_an_installed_copy_without_pyproject_reads_its_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(metadata, "version", lambda name: "9.8.7")

    assert version.read(tmp_path / "pyproject.toml") == (version.DISTRIBUTION, "9.8.7")


def test_neither_is_unknown_not_a_failure(tmp_path: Path) -> None:
    broken = tmp_path / "pyproject.toml"
    broken.write_text("[project\n")

    assert version.read(broken) == (version.DISTRIBUTION, version.UNKNOWN)


def test_the_changelog_newest_release_is_this_version() -> None:
    """A release bumps pyproject.toml and says what changed in CHANGELOG.md together."""
    headings = re.findall(r"^## \[([^\]]+)\]", (ROOT / "CHANGELOG.md").read_text(), re.MULTILINE)

    released = [heading for heading in headings if heading != "Unreleased"]
    assert released[0] == version.VERSION
