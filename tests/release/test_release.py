"""scripts/release.py (`make release`) on a throwaway git repository: each reason it refuses to
tag, with nothing tagged, and the annotated tag it makes once everything is there."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

RELEASED = """# Changelog

## [Unreleased]

## [1.2.0] - 2026-12-02

Für Haushalte: the people's page.

### Added
- A page of people.

## [1.1.0] - 2026-11-26

### Fixed
- Something.
"""


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=_env(repo)
    )
    return done.stdout.strip()


def _env(repo: Path) -> dict[str, str]:
    """Git with an identity of its own and none of this machine's settings (a signing key)."""
    return {
        **os.environ,
        "HOME": str(repo.parent),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "Release Test",
        "GIT_AUTHOR_EMAIL": "release@example.invalid",
        "GIT_COMMITTER_NAME": "Release Test",
        "GIT_COMMITTER_EMAIL": "release@example.invalid",
    }


def _repo(tmp_path: Path, changelog: str = RELEASED, version: str = "1.2.0") -> Path:
    """A repository of one commit: the script, a pyproject.toml naming `version`, a changelog."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "release.py", repo / "scripts" / "release.py")
    (repo / "pyproject.toml").write_text(f'[project]\nname = "x"\nversion = "{version}"\n')
    (repo / "CHANGELOG.md").write_text(changelog, encoding="utf-8")
    _git(repo, "init", "--quiet", "--initial-branch=main")
    _git(repo, "add", ".")
    _git(repo, "commit", "--quiet", "-m", "first")
    return repo


def _release(repo: Path) -> subprocess.CompletedProcess[str]:
    """The script as make release runs it: from the repository's own copy, without arguments."""
    return subprocess.run(
        [sys.executable, "scripts/release.py"],
        cwd=repo, capture_output=True, text=True, check=False, env=_env(repo), timeout=60,
    )  # fmt: skip


def _refused(repo: Path, reason: str) -> None:
    tags_before = _git(repo, "tag", "--list")
    done = _release(repo)
    assert done.returncode == 1, done
    assert done.stderr.startswith("Not tagged. "), done.stderr
    assert reason in done.stderr, done.stderr
    assert _git(repo, "tag", "--list") == tags_before


def test_a_release_is_an_annotated_tag_of_head_with_its_section(tmp_path: Path):
    repo = _repo(tmp_path)
    (repo / "notes.txt").write_text("an untracked file is no part of a commit, nor of a tag")

    done = _release(repo)

    assert done.returncode == 0, done
    head = _git(repo, "rev-parse", "HEAD")
    assert done.stdout.strip() == (
        f"Tagged v1.2.0 at {head[:7]}. Publish it with: git push origin v1.2.0"
    )
    assert _git(repo, "cat-file", "-t", "v1.2.0") == "tag"
    assert _git(repo, "rev-parse", "v1.2.0^{commit}") == head
    message = _git(repo, "tag", "--list", "--format=%(contents)", "v1.2.0")
    assert message == (
        "Version 1.2.0 (2026-12-02)\n\nFür Haushalte: the people's page.\n\n"
        "### Added\n- A page of people."
    )
    # Nothing is pushed: the repository has no remote, and the script names none.
    assert _git(repo, "remote") == ""

    # Run again on the same commit: the tag is there, and nothing is made anew.
    tag_object = _git(repo, "rev-parse", "v1.2.0")
    again = _release(repo)
    assert (again.returncode, again.stdout.strip()) == (
        0,
        f"v1.2.0 already tags HEAD ({head[:7]}): nothing to do.",
    )
    assert _git(repo, "rev-parse", "v1.2.0") == tag_object


def test_a_version_without_a_section_is_refused(tmp_path: Path):
    _refused(
        _repo(tmp_path, version="1.3.0"),
        "CHANGELOG.md has no section for 1.3.0, pyproject.toml's version: add \"## [1.3.0] - ",
    )


def test_no_changelog_is_refused(tmp_path: Path):
    repo = _repo(tmp_path)
    _git(repo, "rm", "--quiet", "CHANGELOG.md")
    _git(repo, "commit", "--quiet", "-m", "no changelog")
    _refused(repo, "CHANGELOG.md has no section for 1.2.0")


@pytest.mark.parametrize(
    "heading",
    ["## [1.2.0]", "## [1.2.0] - soon", "## [1.2.0] - 2026-02-30", "## [1.2.0] - 20261202"],
)
def test_a_section_without_a_real_date_is_refused(tmp_path: Path, heading: str):
    changelog = RELEASED.replace("## [1.2.0] - 2026-12-02", heading)
    _refused(_repo(tmp_path, changelog), "CHANGELOG.md's section for 1.2.0 has no date")


def test_an_empty_section_is_refused(tmp_path: Path):
    changelog = "# Changelog\n\n## [Unreleased]\n\n## [1.2.0] - 2026-12-02\n  \n\n## [1.1.0] - x\n"
    _refused(_repo(tmp_path, changelog), "CHANGELOG.md's section for 1.2.0 is empty")


def test_work_left_under_unreleased_is_refused(tmp_path: Path):
    changelog = RELEASED.replace("## [Unreleased]\n", "## [Unreleased]\n\n### Fixed\n- More.\n")
    _refused(_repo(tmp_path, changelog), 'CHANGELOG.md\'s "[Unreleased]" section is not empty')


def test_a_changelog_without_unreleased_is_released(tmp_path: Path):
    repo = _repo(tmp_path, RELEASED.replace("## [Unreleased]\n\n", ""))
    assert _release(repo).returncode == 0
    assert _git(repo, "cat-file", "-t", "v1.2.0") == "tag"


def test_changes_outside_a_commit_are_refused(tmp_path: Path):
    repo = _repo(tmp_path)
    (repo / "pyproject.toml").write_text('[project]\nversion = "1.2.0"\n# edited\n')
    _refused(repo, "The tree has changes no commit holds: commit them first.\n M pyproject.toml")
    _git(repo, "add", "pyproject.toml")
    _refused(repo, "The tree has changes no commit holds: commit them first.\nM  pyproject.toml")


def test_a_version_tagged_on_another_commit_is_refused(tmp_path: Path):
    repo = _repo(tmp_path)
    _git(repo, "tag", "--annotate", "-m", "Version 1.2.0", "v1.2.0")
    first = _git(repo, "rev-parse", "HEAD")
    (repo / "later.txt").write_text("later work")
    _git(repo, "add", "later.txt")
    _git(repo, "commit", "--quiet", "-m", "later")
    _refused(repo, f"v1.2.0 already tags another commit ({first[:12]}): a new release is a new")


@pytest.mark.parametrize(
    "pyproject", ["[project]\nname = 'x'\n", "[project\nversion = '1.2.0'\n", "version = 1\n"]
)
def test_a_pyproject_without_a_version_is_refused(tmp_path: Path, pyproject: str):
    repo = _repo(tmp_path)
    (repo / "pyproject.toml").write_text(pyproject)
    _git(repo, "commit", "--quiet", "-am", "no version")
    _refused(repo, "pyproject.toml names no version ([project] version)")


def test_this_repository_s_releases_are_tagged_with_their_sections():
    """Each v* tag of this repository is an annotated tag of a tree of that version, with a
    dated section of CHANGELOG.md as its message. A checkout made without tags (a CI's shallow
    one) still checks that every released version has its dated section."""
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    for version in ("1.0.0", "1.1.0"):
        assert f"\n## [{version}] - 2026-11-26\n" in changelog
    for tag in _git(ROOT, "tag", "--list", "v*").split():
        version = tag.removeprefix("v")
        assert _git(ROOT, "cat-file", "-t", tag) == "tag", f"{tag} is not an annotated tag"
        assert f'version = "{version}"' in _git(ROOT, "show", f"{tag}:pyproject.toml")
        dated = re.search(rf"\n## \[{re.escape(version)}\] - (\d{{4}}-\d\d-\d\d)\n", changelog)
        assert dated, f"{tag} has no dated section in CHANGELOG.md"
        message = _git(ROOT, "tag", "--list", "--format=%(contents)", tag)
        assert message.startswith(f"Version {version} ({dated[1]})\n\n"), message
        assert message.split("\n\n", 1)[1] in changelog
