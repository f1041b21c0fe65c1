"""The layout's rules (docs/architecture.md): imports point one way, enforced by import-linter,
no /v1/ route sits where the catch-all 404 would hide it, and every test module that starts a
real server or drives a browser carries the e2e marker."""

import ast
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, resolve, reverse

from api.views import NotFoundView

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
LAYERS = "Layers: config, domain apps, accounts, api, core"
INDEPENDENT = "Apps built on subscriptions are independent"
PROTOCOLS = "Each protocol's views are independent"
PACKAGES = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
    "root_packages"
]


def lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the project's packages and import-linter's configuration."""
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("*.pyc"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    return tmp_path


def test_the_imports_keep_every_contract(tree):
    result = lint_imports(tree)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{LAYERS} KEPT" in result.stdout
    assert f"{INDEPENDENT} KEPT" in result.stdout
    assert f"{PROTOCOLS} KEPT" in result.stdout


@pytest.mark.parametrize(
    ("module", "wrong_way", "contract"),
    [
        # The examples the rule exists for: subscriptions learn of the apps above them by signals.
        ("subscriptions/services.py", "deletions.models", LAYERS),
        ("subscriptions/selectors.py", "feedchecks.models", LAYERS),
        ("core/clock.py", "api.errors", LAYERS),
        ("api/views.py", "accounts.services", LAYERS),
        ("accounts/services.py", "subscriptions.models", LAYERS),
        ("subscriptions/models.py", "config.settings", LAYERS),
        ("deletions/selectors.py", "feedchecks.models", INDEPENDENT),
        ("feedchecks/services.py", "deletions.services", INDEPENDENT),
        ("subscriptions/selectors.py", "gpodder.models", LAYERS),
        ("gpodder/services.py", "deletions.services", INDEPENDENT),
        # Episode actions build on gpodder's devices; deletions learn of them by a signal.
        ("gpodder/models.py", "episodes.models", LAYERS),
        ("deletions/services.py", "episodes.services", LAYERS),
        # The apps' protocols share their plumbing from api/ and accounts/, not each other's views.
        ("episodes/views.py", "gpodder.views", PROTOCOLS),
        ("nextcloud/views.py", "episodes.views", PROTOCOLS),
    ],
)
def test_a_wrong_way_import_breaks_a_contract(tree, module, wrong_way, contract):
    """Also inside a function, where an import is easiest to overlook."""
    with (tree / module).open("a") as source:
        source.write(f"\n\ndef _wrong_way() -> None:\n    import {wrong_way}  # noqa\n")
    result = lint_imports(tree)
    assert result.returncode != 0, result.stdout
    assert f"{contract} BROKEN" in result.stdout
    assert f"{module.removesuffix('.py').replace('/', '.')} -> {wrong_way}" in result.stdout


def v1_routes() -> list[Any]:
    [v1] = [p for p in get_resolver().url_patterns if str(p.pattern) == "v1/"]
    assert isinstance(v1, URLResolver)
    return list(v1.url_patterns)


def test_the_catch_all_is_the_last_v1_route():
    routes = v1_routes()
    catch_alls = [
        i
        for i, route in enumerate(routes)
        if getattr(route.callback, "view_class", None) is NotFoundView
    ]
    assert catch_alls == [len(routes) - 1]


def test_every_named_v1_route_is_reached_by_its_own_path():
    """A route listed after the catch-all would still reverse, but resolve to the 404."""
    named = [r for r in v1_routes() if isinstance(r, URLPattern) and r.name != "not-found"]
    assert len(named) >= 10
    for route in named:
        kwargs = {group: "1" for group in route.pattern.regex.groupindex}
        path = reverse(route.name, kwargs=kwargs)
        assert resolve(path).url_name == route.name, path


# --- The e2e marker ---------------------------------------------------------------------------
# What a test module names when it starts a real server or drives a browser: the helpers of
# tests/servers.py that start PostgreSQL, PgBouncer, Redis, runserver or gunicorn, a process
# started by hand, `manage.py serve`, Selenium (tests/e2e/browser.py); and the fixtures that
# start one.
STARTS_A_SERVER = re.compile(
    r"\b(?:servers\.(?:redis|pgbouncer|postgres|runserver)|gunicorn_service|Popen)\("
    r"|\"serve\"|\bselenium\b|\btests\.e2e\.browser\b"
)
SERVER_FIXTURES = {"live_server", "redis_server", "broker", "worker_factory"}


def servers_started(source: str) -> set[str]:
    """The names in a test module's source that start a server or a browser."""
    found = {match.group(0) for match in STARTS_A_SERVER.finditer(source)}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and (
            node.name.startswith("test_")
            or any("fixture" in ast.unparse(d) for d in node.decorator_list)
        ):
            found |= {arg.arg for arg in node.args.args if arg.arg in SERVER_FIXTURES}
    return found


def marked_e2e(source: str) -> bool:
    """Whether the module's pytestmark holds pytest.mark.e2e."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and "pytestmark" in map(ast.unparse, node.targets):
            return "pytest.mark.e2e" in ast.unparse(node.value)
    return False


def test_every_module_that_starts_a_server_or_a_browser_is_marked_e2e():
    """`-m e2e` and `-m "not e2e"` select by the module's pytestmark. Every module of tests/e2e
    is recognised, so the names above keep up with what starts a server."""
    started = {
        path.relative_to(ROOT).as_posix(): servers_started(path.read_text())
        for path in sorted((ROOT / "tests").rglob("test_*.py"))
    }
    unmarked = [
        f"{module}: {sorted(names)}"
        for module, names in started.items()
        if names and not marked_e2e((ROOT / module).read_text())
    ]
    assert not unmarked, "without pytestmark = pytest.mark.e2e: " + "; ".join(unmarked)
    unrecognised = [m for m, names in started.items() if m.startswith("tests/e2e/") and not names]
    assert not unrecognised, unrecognised
