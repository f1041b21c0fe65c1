"""bench.harness.server_cpu counts the servers the bench started, by their process trees: never
another process of the machine, even one named like a server (other people's gunicorn or
PostgreSQL on a shared machine), and a tree's child that ended still counts."""

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest

from bench.harness import Tree, cpu_used, postgres_tree, server_cpu, under_test
from tests import servers

# It starts real processes of its own, to count their CPU.
pytestmark = pytest.mark.e2e

# Bounded by its own clock, should the test die before it stops them.
BUSY = "import time\nend = time.monotonic() + 60\nwhile time.monotonic() < end: pass\n"
# Half a second of its own CPU, however busy the machine.
BURN = "import time\nwhile time.process_time() < 0.5: pass\n"


@contextmanager
def started(*argv: str) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        [sys.executable, *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        yield process
    finally:
        for member in psutil.Process(process.pid).children(recursive=True):
            member.kill()
        process.kill()
        process.wait(timeout=10)


def cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


def test_a_busy_process_in_the_tree_counts_and_one_outside_does_not() -> None:
    spawns_busy = f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {BUSY!r}])\n"
    # Named as the servers were matched before: by gunicorn and postgres in its command line.
    with started("-c", spawns_busy) as root, started("-c", BUSY, "gunicorn", "postgres") as other:
        deadline = time.monotonic() + 10
        while not psutil.Process(root.pid).children():
            assert time.monotonic() < deadline, "the tree's busy child did not start"
            time.sleep(0.01)
        inside, outside = psutil.Process(root.pid).children()[0], psutil.Process(other.pid)
        with under_test(Tree("service", lambda: root.pid)):
            before = server_cpu()
            inside_before, outside_before = cpu_seconds(inside), cpu_seconds(outside)
            time.sleep(1.5)
            used = cpu_used(before, server_cpu())
            inside_used = cpu_seconds(inside) - inside_before
            outside_used = cpu_seconds(outside) - outside_before

    assert outside_used > 0.3, "the process outside the tree was not busy: nothing is shown"
    assert inside_used > 0.3
    assert set(used) == {"service"}
    assert used["service"] == pytest.approx(inside_used, abs=0.1)


def test_a_child_that_ended_and_was_waited_for_still_counts() -> None:
    # It runs the child when told (a line on stdin), then says so and waits.
    waits_for_a_child = (
        "import subprocess, sys\ninput()\n"
        f"subprocess.run([sys.executable, '-c', {BURN!r}])\nprint('done', flush=True)\ninput()\n"
    )
    with started("-c", waits_for_a_child) as root:
        assert root.stdin is not None
        assert root.stdout is not None
        tree = Tree("service", lambda: root.pid)
        before = server_cpu([tree])
        root.stdin.write("\n")
        root.stdin.flush()
        assert root.stdout.readline() == "done\n"
        assert not psutil.Process(root.pid).children()
        used = cpu_used(before, server_cpu([tree]))

    assert used["service"] >= 0.45


def test_a_tree_not_running_is_left_out() -> None:
    assert server_cpu([Tree("service", lambda: None)]) == {}


def test_postgresql_is_found_by_its_data_folder(tmp_path: Path) -> None:
    pg = servers.Server("127.0.0.1", 5432, tmp_path)
    tree = postgres_tree(pg)
    assert tree.root() is None  # not started, or stopped
    with started("-c", BUSY) as postmaster:
        (tmp_path / "data").mkdir()
        (tmp_path / "data" / "postmaster.pid").write_text(f"{postmaster.pid}\n{tmp_path}\n")
        assert tree.root() == postmaster.pid
        assert tree.kind == "PostgreSQL"
        assert set(server_cpu([tree])) == {postmaster.pid}
