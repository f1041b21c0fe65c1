"""The server's name and version, as a self-hoster sees them (the pages' footer, /health,
/v1/capabilities): pyproject.toml's, its one source, read once at import.

The service runs from its source tree (`make run`, the container image, a systemd unit), not as
an installed package, so the file beside the code is read first; an installed copy's metadata
is the fallback.
"""

import tomllib
from importlib import metadata
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"
DISTRIBUTION = "opa-subscriptions"
UNKNOWN = "unknown"


def read(pyproject: Path = PYPROJECT) -> tuple[str, str]:
    """(name, version) of the project: from `pyproject`, else the installed distribution's."""
    try:
        with open(pyproject, "rb") as file:
            project = tomllib.load(file)["project"]
        return str(project["name"]), str(project["version"])
    except (OSError, tomllib.TOMLDecodeError, KeyError):
        pass
    try:
        return DISTRIBUTION, metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return DISTRIBUTION, UNKNOWN


NAME, VERSION = read()
