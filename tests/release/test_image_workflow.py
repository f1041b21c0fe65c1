""".github/workflows/image.yml, as far as it can be checked without GitHub (which this machine
does not reach): it parses, runs on a release's tag alone, builds the Containerfile for amd64
and arm64, and publishes to ghcr.io under the repository's own name, with pinned actions."""

import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "image.yml"


def _workflow() -> dict[Any, Any]:
    loaded = yaml.safe_load(WORKFLOW.read_text())
    assert isinstance(loaded, dict)
    return loaded


def _steps() -> dict[str, dict[str, Any]]:
    """The job's steps by the action each uses, without its version."""
    (job,) = _workflow()["jobs"].values()
    return {step["uses"].split("@")[0]: step for step in job["steps"]}


def test_it_runs_on_a_release_s_tag_alone():
    # YAML 1.1, which PyYAML reads, takes the key `on` for true.
    trigger = _workflow()[True]
    assert trigger == {"push": {"tags": ["v*"]}}


def test_it_builds_the_containerfile_for_amd64_and_arm64_and_pushes():
    steps = _steps()
    assert list(steps) == [
        "actions/checkout",
        "docker/setup-qemu-action",
        "docker/setup-buildx-action",
        "docker/login-action",
        "docker/metadata-action",
        "docker/build-push-action",
    ]
    build = steps["docker/build-push-action"]["with"]
    assert build["platforms"].split(",") == ["linux/amd64", "linux/arm64"]
    assert (ROOT / build["context"] / build["file"]).is_file()
    assert build["push"] is True
    assert build["tags"] == "${{ steps.meta.outputs.tags }}"


def test_it_publishes_under_the_repository_s_name_as_version_minor_and_latest():
    steps = _steps()
    login = steps["docker/login-action"]["with"]
    assert login == {
        "registry": "ghcr.io",
        "username": "${{ github.actor }}",
        "password": "${{ secrets.GITHUB_TOKEN }}",
    }
    assert _workflow()["permissions"] == {"contents": "read", "packages": "write"}
    meta = steps["docker/metadata-action"]
    assert meta["id"] == "meta"
    assert meta["with"]["images"] == "ghcr.io/${{ github.repository }}"
    assert meta["with"]["tags"].split() == [
        "type=semver,pattern={{version}}",
        "type=semver,pattern={{major}}.{{minor}}",
    ]
    assert meta["with"]["flavor"].split() == ["latest=true"]


def test_every_action_is_pinned_to_a_release():
    (job,) = _workflow()["jobs"].values()
    for step in job["steps"]:
        assert re.fullmatch(r"[\w-]+/[\w-]+@v\d+\.\d+\.\d+", step["uses"]), step["uses"]
