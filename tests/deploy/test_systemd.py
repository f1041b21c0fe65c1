"""The systemd units of deploy/systemd: each passes `systemd-analyze verify` and stays hardened,
bounds the memory and tasks of every long-running one, runs what the project really has
(commands, queues, settings), and the verify itself catches a broken unit.

systemd-analyze checks that every command a unit runs exists and is executable, so the units are
verified as rendered for this checkout: /opt/podsync becomes the repository and its .venv the
tests' own (the same python, gunicorn and celery), /etc/podsync and /var/lib/podsync folders of
the test's own, and the podsync user this test's user.
"""

import os
import re
import shlex
import shutil
import subprocess

import pytest

from tests.deploy.systemd import INSTALL_DIR, ROOT, UNITS, install, verify

SERVICES = sorted(path.name for path in UNITS.glob("*.service"))
TIMERS = sorted(path.name for path in UNITS.glob("*.timer"))
HOME = "podsync-home.service"
LONG_RUNNING = [
    HOME,
    "podsync-web.service",
    "podsync-worker-deletions.service",
    "podsync-worker-feeds.service",
    "podsync-beat.service",
]
ONESHOTS = ["podsync-clear-expired.service", "podsync-migrate.service"]
# systemd-analyze security's rating of each unit as written (0 best, 10 worst); "OK" below 2.
MAX_EXPOSURE = 2.0
HARDENING = {
    "NoNewPrivileges": "yes",
    "ProtectSystem": "strict",
    "ProtectHome": "yes",
    "PrivateTmp": "yes",
    "PrivateDevices": "yes",
    "CapabilityBoundingSet": "",
}


def parse(text: str) -> dict[str, list[tuple[str, str]]]:
    """A unit's sections, each a list of (key, value) in order: a key may repeat (ExecStart)."""
    sections: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), [])
        else:
            key, _, value = line.partition("=")
            current.append((key.strip(), value.strip()))
    return sections


def values(unit: str, section: str, key: str) -> list[str]:
    return [v for k, v in parse((UNITS / unit).read_text()).get(section, []) if k == key]


def value(unit: str, section: str, key: str) -> str:
    found = values(unit, section, key)
    assert len(found) == 1, (unit, section, key, found)
    return found[0]


def words(unit: str, section: str, key: str) -> set[str]:
    return {word for v in values(unit, section, key) for word in v.split()}


@pytest.fixture(scope="module")
def systemd_analyze() -> str:
    """Fails, never skips, without it: scripts/install-servers.sh (`make test`) installs it."""
    found = shutil.which("systemd-analyze")
    if found is None:
        pytest.fail(
            "systemd-analyze is missing: install Debian's systemd package "
            "(scripts/install-servers.sh does, as make test runs it)"
        )
    return found


def all_units() -> dict[str, str]:
    return {name: (UNITS / name).read_text() for name in SERVICES + TIMERS}


# --- systemd-analyze ---------------------------------------------------------------------------


def test_every_unit_passes_systemd_analyze_verify(systemd_analyze, tmp_path):
    assert set(LONG_RUNNING + ONESHOTS) == set(SERVICES)

    problems = verify(systemd_analyze, install(tmp_path, all_units()))

    assert problems == []


# Each a unit that verify must refuse: (the unit's name, what is wrong, the line changed, the
# line it becomes, what the refusal says).
BROKEN = [
    (
        "podsync-web.service",
        "a command that is not there",
        "bin/gunicorn",
        "bin/gunicorn-missing",
        "gunicorn-missing is not executable",
    ),
    (
        "podsync-home.service",
        "a mistyped key",
        "ProtectSystem=strict",
        "ProtectSytem=strict",
        "Unknown key 'ProtectSytem'",
    ),
    (
        "podsync-worker-feeds.service",
        "a mistyped value",
        "Restart=always",
        "Restart=allways",
        "allways",
    ),
    ("podsync-beat.service", "no command", "ExecStart=", "#ExecStart=", "no ExecStart="),
    (
        "podsync-worker-deletions.service",
        "a memory limit systemd cannot read",
        "MemoryMax=1536M",
        "MemoryMax=1.5 gigabytes",
        "Invalid memory limit",
    ),
    (
        "podsync-home.service",
        "a task limit systemd cannot read",
        "TasksMax=64",
        "TasksMax=many",
        "Invalid maximum tasks value",
    ),
    (
        "podsync-clear-expired.service",
        "Restart=always on a oneshot",
        "Restart=on-failure",
        "Restart=always",
        "Type=oneshot",
    ),
    ("podsync-clear-expired.timer", "a timer without its service", None, None, "not among"),
]


@pytest.mark.parametrize(
    ("unit", "wrong", "line", "becomes", "said"), BROKEN, ids=[b[1] for b in BROKEN]
)
def test_verify_refuses_a_broken_unit(systemd_analyze, tmp_path, unit, wrong, line, becomes, said):
    units = {unit: (UNITS / unit).read_text()}
    if line is None:  # the timer alone
        assert unit.endswith(".timer")
    else:
        assert line in units[unit]
        units[unit] = units[unit].replace(line, becomes, 1)

    problems = verify(systemd_analyze, install(tmp_path, units))

    assert any(said in problem for problem in problems), (wrong, problems)


def test_each_unit_alone_passes_as_well(systemd_analyze, tmp_path):
    """So the refusals above come from what was broken, not from a unit left out."""
    for name, text in all_units().items():
        if name.endswith(".timer"):
            continue
        folder = tmp_path / name
        folder.mkdir()
        assert verify(systemd_analyze, install(folder, {name: text})) == [], name


@pytest.mark.parametrize("unit", SERVICES)
def test_every_service_is_hardened(systemd_analyze, tmp_path, unit):
    [path] = install(tmp_path, {unit: (UNITS / unit).read_text()})
    for key, expected in HARDENING.items():
        assert value(unit, "Service", key) == expected, key

    result = subprocess.run(
        [systemd_analyze, "security", "--offline=true", "--no-pager", str(path)],
        capture_output=True,
        text=True,
        env={**os.environ, "SYSTEMD_LOG_COLOR": "0"},
        timeout=120,
    )

    found = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", result.stdout)
    assert found, result.stdout + result.stderr
    assert float(found.group(1)) <= MAX_EXPOSURE, result.stdout


# --- What the units say ------------------------------------------------------------------------


@pytest.mark.parametrize("unit", SERVICES)
def test_every_service_runs_as_podsync_from_the_install_dir(unit):
    assert value(unit, "Service", "User") == "podsync"
    assert value(unit, "Service", "Group") == "podsync"
    assert value(unit, "Service", "WorkingDirectory") == INSTALL_DIR
    [environment] = values(unit, "Service", "EnvironmentFile")
    expected = "podsync-home.env" if unit == HOME else "podsync.env"
    assert environment == f"/etc/podsync/{expected}"
    for command in values(unit, "Service", "ExecStart"):
        assert command.startswith(f"{INSTALL_DIR}/.venv/bin/"), command
    assert "network-online.target" in words(unit, "Unit", "After")
    assert "network-online.target" in words(unit, "Unit", "Wants")


@pytest.mark.parametrize("unit", LONG_RUNNING)
def test_long_running_services_restart_always(unit):
    assert value(unit, "Service", "Restart") == "always"
    assert value(unit, "Install", "WantedBy") == "multi-user.target"


# systemd's suffixes for a size: powers of 1024.
SIZE_SUFFIXES = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}


def size_in_bytes(text: str) -> int:
    found = re.fullmatch(r"(\d+)([KMGT]?)", text)
    assert found, f"not a size of bytes: {text!r}"  # a percentage would follow the host instead
    return int(found.group(1)) * SIZE_SUFFIXES[found.group(2)]


@pytest.mark.parametrize("unit", LONG_RUNNING)
def test_long_running_services_are_bounded_in_memory_and_tasks(unit):
    """A leak or a runaway stops at its own unit's limits (deploy/systemd/README.md, "Limits"),
    not at the kernel's OOM killer choosing among the host's processes: the kernel reclaims and
    slows the unit past MemoryHigh, and stops it at MemoryMax, which is the higher."""
    high = size_in_bytes(value(unit, "Service", "MemoryHigh"))
    most = size_in_bytes(value(unit, "Service", "MemoryMax"))
    tasks = int(value(unit, "Service", "TasksMax"))

    # Above the 100 to 150 MB one of the service's processes takes, and below a whole host's.
    assert 128 * 1024**2 < high < most <= 4 * 1024**3, (high, most)
    assert 16 <= tasks <= 1024


@pytest.mark.parametrize(
    "unit",
    ["podsync-home.service", "podsync-web.service", "podsync-worker-feeds.service"],
)
def test_uploads_and_imports_keep_their_temporary_files_on_disk(unit):
    """A history file being received, and an import's copies, go to the unit's own /var/tmp:
    in a /tmp that is a tmpfs they would count against MemoryMax."""
    environment = dict(
        pair.split("=", 1)
        for line in values(unit, "Service", "Environment")
        for pair in line.split()
    )
    assert environment["TMPDIR"] == "/var/tmp"
    assert value(unit, "Service", "PrivateTmp") == "yes"


def test_the_limits_are_the_readmes():
    """deploy/systemd/README.md's table of limits says what each unit sets."""
    readme = (UNITS / "README.md").read_text()
    rows = {
        found.group(1): found.group(2, 3, 4)
        for found in re.finditer(
            r"^\| `(podsync-[a-z-]+\.service)` \| [^|]+ \| `MemoryHigh=(\S+)`, `MemoryMax=(\S+)`,"
            r" `TasksMax=(\d+)` \|",
            readme,
            flags=re.MULTILINE,
        )
    }
    assert rows == {
        unit: tuple(value(unit, "Service", key) for key in ("MemoryHigh", "MemoryMax", "TasksMax"))
        for unit in LONG_RUNNING
    }


@pytest.mark.parametrize(
    "unit",
    ["podsync-web.service", "podsync-worker-deletions.service", "podsync-worker-feeds.service"],
)
def test_web_and_workers_come_after_the_database_and_broker(unit):
    for key in ("After", "Wants"):
        assert {"postgresql.service", "redis-server.service"} <= words(unit, "Unit", key), key


def test_the_home_server_is_manage_py_serve_with_its_data_writable():
    assert value(HOME, "Service", "ExecStart") == (
        f"{INSTALL_DIR}/.venv/bin/python {INSTALL_DIR}/manage.py serve"
    )
    assert value(HOME, "Service", "StateDirectory") == "podsync"
    assert "DATA_DIR=/var/lib/podsync" in words(HOME, "Service", "Environment")
    assert {"/var/lib/podsync", f"{INSTALL_DIR}/staticfiles"} <= words(
        HOME, "Service", "ReadWritePaths"
    )
    assert values(HOME, "Unit", "Wants") == ["network-online.target"]  # no other service


def test_the_worker_pools_are_the_operations_guides():
    """docs/operations.md, "Processes": one pool for deletions and the sweep, one for feed
    checks and imports."""
    from django.conf import settings

    deletions = shlex.split(value("podsync-worker-deletions.service", "Service", "ExecStart"))
    feeds = shlex.split(value("podsync-worker-feeds.service", "Service", "ExecStart"))
    beat = shlex.split(value("podsync-beat.service", "Service", "ExecStart"))

    assert deletions[1:6] == ["-A", "config", "worker", "-Q", "deletions,celery"]
    assert feeds[1:8] == ["-A", "config", "worker", "-Q", "feeds,imports", "--concurrency", "16"]
    assert beat[1:4] == ["-A", "config", "beat"]
    assert beat[beat.index("--schedule") + 1].startswith("/var/lib/podsync/")
    queues = {q for pool in (deletions[5], feeds[5]) for q in pool.split(",")}
    assert queues == set(settings.QUEUES)  # every queue has a pool, and no pool a stray name


def test_the_oneshots_run_commands_manage_py_has():
    from django.core.management import get_commands

    ran = []
    for unit in ONESHOTS:
        assert value(unit, "Service", "Type") == "oneshot"
        for command in values(unit, "Service", "ExecStart"):
            argv = shlex.split(command)
            assert argv[1] == f"{INSTALL_DIR}/manage.py", command
            ran.append(argv[2])
    assert set(ran) <= set(get_commands())
    assert {"clearsessions", "flushexpiredtokens", "migrate", "collectstatic"} == set(ran)


def test_the_timer_runs_the_clearing_daily():
    timer = "podsync-clear-expired.timer"
    assert value(timer, "Timer", "OnCalendar") == "daily"
    assert value(timer, "Timer", "Persistent") == "true"
    assert value(timer, "Install", "WantedBy") == "timers.target"
    assert (UNITS / "podsync-clear-expired.service").exists()


# --- The environment files ---------------------------------------------------------------------


READ_BY = [
    ROOT / "config" / "settings" / "base.py",
    ROOT / "config" / "gunicorn.py",
    ROOT / "config" / "gunicorn_home.py",
    ROOT / "home" / "management" / "commands" / "serve.py",
]


@pytest.mark.parametrize("example", ["podsync-home.env.example", "podsync.env.example"])
def test_the_environment_examples_name_only_settings_the_code_reads(example):
    code = "\n".join(path.read_text() for path in READ_BY)
    named = []
    for line in (UNITS / example).read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("# ") or line == "#":
            continue
        found = re.fullmatch(r"#?([A-Z][A-Z0-9_]*)=(.*)", line)
        assert found, f"not NAME=value: {line!r}"
        named.append(found.group(1))
    for name in named:
        assert f'"{name}"' in code, name
    assert len(named) == len(set(named))


def test_the_full_layouts_example_sets_what_production_needs():
    text = (UNITS / "podsync.env.example").read_text()
    set_here = set(re.findall(r"^([A-Z][A-Z0-9_]*)=", text, flags=re.MULTILINE))
    assert {
        "SECRET_KEY",
        "DATABASE_URL",
        "REDIS_URL",
        "ALLOWED_HOSTS",
        "PUBLIC_URL",
        "TRUSTED_PROXIES",
    } <= set_here
    assert re.search(r"^SECRET_KEY=$", text, flags=re.MULTILINE)  # empty: no start without one
