"""make release: tag the version pyproject.toml names, once everything a release needs is there
(docs/containers.md, "Releases").

Before anything is tagged it checks that CHANGELOG.md has a dated, non-empty section for the
version, that "[Unreleased]" holds nothing (its work belongs in that section), that the tree
has no change outside a commit, and that no tag of the version names another commit. Then it
makes the annotated tag `v<version>` on HEAD, with the section as its message. It pushes
nothing: `git push origin v<version>` publishes the release, and CI builds its image.
"""

import datetime
import re
import subprocess
import sys
import tomllib
from pathlib import Path

# A version's heading, as Keep a Changelog writes it: "## [1.2.0] - 2026-12-02".
HEADING = re.compile(r"^## \[(?P<name>[^\]]+)\](?:[ \t]+-[ \t]+(?P<date>\S+))?[ \t]*$", re.M)


class Refused(Exception):
    """A reason not to tag, in the words printed to the person releasing."""


def git(root: Path, *args: str, input: str | None = None, check: bool = True) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), *args], input=input, capture_output=True, text=True, check=False
    )
    if check and done.returncode != 0:
        raise Refused(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout.rstrip("\n")


def sections(changelog: str) -> dict[str, tuple[str | None, str]]:
    """Each section of the changelog by its name: its date (None when it has none) and text."""
    found = list(HEADING.finditer(changelog))
    result = {}
    for heading, following in zip(found, [*found[1:], None], strict=True):
        end = following.start() if following else len(changelog)
        result[heading["name"]] = (heading["date"], changelog[heading.end() : end].strip())
    return result


def release_check(root: Path) -> tuple[str, str | None]:
    """The tag to make and its message (None when the tag already names HEAD), or Refused with
    the first reason not to."""
    try:
        version = tomllib.loads((root / "pyproject.toml").read_text())["project"]["version"]
    except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError) as error:
        raise Refused(f"pyproject.toml names no version ([project] version): {error}") from None
    tag = f"v{version}"
    head = git(root, "rev-parse", "HEAD")
    tagged = git(
        root, "rev-parse", "--verify", "--quiet", f"refs/tags/{tag}^{{commit}}", check=False
    )
    if tagged and tagged != head:
        raise Refused(
            f"{tag} already tags another commit ({tagged[:12]}): a new release is a new "
            "version in pyproject.toml, with a section of its own in CHANGELOG.md."
        )
    changelog = root / "CHANGELOG.md"
    found = sections(changelog.read_text(encoding="utf-8")) if changelog.exists() else {}
    if version not in found:
        raise Refused(
            f"CHANGELOG.md has no section for {version}, pyproject.toml's version: "
            f'add "## [{version}] - {datetime.date.today()}" with what changed.'
        )
    date, text = found[version]
    if date is None or not _is_date(date):
        raise Refused(
            f"CHANGELOG.md's section for {version} has no date: write its heading as "
            f'"## [{version}] - YYYY-MM-DD", the day of the release.'
        )
    if not text:
        raise Refused(f"CHANGELOG.md's section for {version} is empty: say what changed.")
    if found.get("Unreleased", (None, ""))[1]:
        raise Refused(
            'CHANGELOG.md\'s "[Unreleased]" section is not empty: what it says belongs in '
            f"{version}'s section, the release's."
        )
    changed = git(root, "status", "--porcelain", "--untracked-files=no")
    if changed:
        raise Refused(f"The tree has changes no commit holds: commit them first.\n{changed}")
    return tag, None if tagged else f"Version {version} ({date})\n\n{text}\n"


def _is_date(text: str) -> bool:
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        return False
    try:
        datetime.date.fromisoformat(text)
    except ValueError:  # 2026-02-30
        return False
    return True


def main(root: Path) -> int:
    try:
        tag, message = release_check(root)
        head = git(root, "rev-parse", "--short", "HEAD")
        if message is None:
            print(f"{tag} already tags HEAD ({head}): nothing to do.")
            return 0
        git(root, "tag", "--annotate", "--cleanup=verbatim", "--file=-", tag, input=message)
    except Refused as refused:
        print(f"Not tagged. {refused}", file=sys.stderr)
        return 1
    print(f"Tagged {tag} at {head}. Publish it with: git push origin {tag}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parents[1]))
