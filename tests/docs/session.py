"""A person's shell on a machine of its own, for running a guide's blocks as written
(tests/docs/test_self_hosting.py).

The shell is bash in private network, mount and host-name namespaces: its machine is named
`raspberrypi`, has the LAN address 192.168.1.50 (on loopback: nothing leaves the namespace) and
an /etc/hosts of its own that gives a home network's names for it, so `make run` gets port 8000
whatever else this machine runs, prints the addresses the guide shows, and `curl
http://raspberrypi.local:8000/health` reaches it by name. It starts in a fresh clone of the
repository (tracked and new files, nothing ignored) whose `.venv` is a link to the repository's,
so nothing is installed, with only PATH, LANG and a HOME of its own in its environment.

Each block is run by the one shell, so a `cd` or a variable carries to the next block, with
errexit on: a command that fails ends the shell, and the block with it.
"""

import contextlib
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tests.servers import ROOT

MACHINE = "raspberrypi"
LAN_ADDRESS = "192.168.1.50"
# The names a home network gives the machine (mDNS, RFC 8375's), resolving to its LAN address.
HOSTS = (
    "127.0.0.1 localhost\n"
    "::1 localhost ip6-localhost ip6-loopback\n"
    f"{LAN_ADDRESS} {MACHINE} {MACHINE}.local podsync.home.arpa\n"
)
HEALTH = "http://127.0.0.1:8000/health"
RUN_TIMEOUT = 180  # a block that runs: a backup, changepassword, git pull
START_TIMEOUT = 180  # make run's first start: migrations and the static files, on a loaded host
STOP_TIMEOUT = 60


class SessionError(AssertionError):
    """A block did not do what the guide says; the message says which, and what it printed."""


@dataclass
class Ran:
    status: str  # "0" for a run that ended well, "up" for a start that serves
    output: str


def person() -> dict[str, str]:
    """A person's shell: none of the settings this test process set for itself (SECRET_KEY,
    DJANGO_SETTINGS_MODULE, DATABASE_URL, ...)."""
    return {name: os.environ[name] for name in ("PATH", "LANG") if name in os.environ}


def _git(*args: str, cwd: Path) -> None:
    environment = {
        **person(),
        "HOME": str(cwd),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "docs test",
        "GIT_AUTHOR_EMAIL": "docs@test.invalid",
        "GIT_COMMITTER_NAME": "docs test",
        "GIT_COMMITTER_EMAIL": "docs@test.invalid",
    }
    subprocess.run(["git", *args], cwd=cwd, env=environment, check=True, capture_output=True)


def clone(work: Path, home: Path) -> Path:
    """`home`/opa-subscriptions: a clone of the repository as it is now (tracked and new files,
    nothing ignored), with an origin to pull from, file times kept so that make finds the venv up
    to date, and `.venv` a link to the repository's."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.split(b"\0")  # fmt: skip
    upstream = work / "upstream"
    names = [name.decode() for name in listed if name and (ROOT / name.decode()).is_file()]
    for name in names:
        (upstream / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, upstream / name)
    _git("init", "-q", "-b", "main", cwd=upstream)
    _git("add", "-A", cwd=upstream)
    _git("commit", "-q", "-m", "The repository as the test found it", cwd=upstream)
    folder = home / "opa-subscriptions"
    _git("clone", "-q", str(upstream), str(folder), cwd=home)
    for name in names:  # a clone's files are as new as the clone; these keep their own times
        stat = (upstream / name).stat()
        os.utime(folder / name, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    (folder / ".venv").symlink_to(ROOT / ".venv")
    return folder


def _tool(name: str) -> str:
    found = shutil.which(name) or next(
        (str(p) for p in (Path("/usr/sbin") / name, Path("/sbin") / name) if p.exists()), None
    )
    if found is None:
        raise SessionError(f"{name} is missing: the shell's machine cannot be made without it")
    return found


class Session:
    """The shell, one block at a time; `close()` stops whatever it still runs."""

    def __init__(self, folder: Path, home: Path, work: Path):
        self.folder, self.home, self.work = folder, home, work
        self.steps = 0
        self.job: int | None = None  # the process group of what the last start started
        self.jobs: list[int] = []
        self.log = work / "shell.log"
        (work / "hosts").write_text(HOSTS)
        unshare = [_tool("unshare"), "--net", "--mount", "--uts", "--propagation", "private"]
        if os.geteuid() != 0:
            unshare.append("--map-root-user")
        with open(self.log, "wb") as log:
            self.shell = subprocess.Popen(
                [*unshare, "--", "bash", "--noprofile", "--norc"],
                cwd=folder, env={**person(), "HOME": str(home)}, stdin=subprocess.PIPE,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        # The machine, then the person's shell: errexit, and job control so that what a start
        # starts has its own process group, as a terminal's job has, for Ctrl+C.
        self._step(
            "set -e -m\n"
            f"{_tool('ip')} link set lo up\n"
            f"{_tool('ip')} address add {LAN_ADDRESS}/32 dev lo\n"
            f"{_tool('hostname')} {MACHINE}\n"
            f"{_tool('mount')} --bind {work / 'hosts'} /etc/hosts",
            "making the shell's machine",
            RUN_TIMEOUT,
        )

    def _send(self, script: str) -> None:
        assert self.shell.stdin is not None
        try:
            self.shell.stdin.write(script.encode())
            self.shell.stdin.flush()
        except BrokenPipeError:
            pass  # the shell is gone: _wait says so

    def _step(self, script: str, what: str, timeout: float, output: Path | None = None) -> str:
        """Send `script`, which ends by writing its outcome; wait for it and answer it."""
        self.steps += 1
        done = self.work / f"{self.steps}.done"
        self._send(
            f'__outcome=0\n{script}\necho "$__outcome" >{done}.tmp && mv {done}.tmp {done}\n'
        )
        deadline = time.monotonic() + timeout
        while not done.exists():
            if self.shell.poll() is not None:
                raise SessionError(
                    f"{what}: a command failed and ended the shell "
                    f"(exit status {self.shell.returncode}){self._said(output)}"
                )
            if time.monotonic() > deadline:
                raise SessionError(f"{what}: not done after {timeout:.0f} s{self._said(output)}")
            time.sleep(0.1)
        return done.read_text().strip()

    def _said(self, output: Path | None) -> str:
        said = ""
        if output is not None and output.exists():
            said += f"\n--- it printed:\n{output.read_text(errors='replace')[-6000:]}"
        said += f"\n--- the shell said:\n{self.log.read_text(errors='replace')[-3000:]}"
        return said

    def run(self, text: str, where: str, typed: str | None = None) -> Ran:
        """The block, in the shell, its prompts answered with `typed`; it must end well."""
        output = self.work / f"{self.steps + 1}.out"
        typing = self.work / f"{self.steps + 1}.in"
        typing.write_text(typed or "")
        self._step(f"{{\n{text}}} <{typing} >{output} 2>&1", where, RUN_TIMEOUT, output)
        return Ran("0", output.read_text(errors="replace"))

    def start(self, text: str, where: str) -> Ran:
        """The block, in the background of the shell as a job of its own; then until /health
        answers 200, or the job ends."""
        if self.job is not None:
            raise SessionError(f"{where}: started while the last start still runs")
        output = self.work / f"{self.steps + 1}.out"
        job = self.work / f"{self.steps + 1}.job"
        script = (
            f"{{\n{text}}} </dev/null >{output} 2>&1 &\n"
            "__job=$!\n"
            f"echo $__job >{job}.tmp && mv {job}.tmp {job}\n"
            "__outcome=waited\n"
            f"for __try in $(seq {START_TIMEOUT * 5}); do\n"
            f"  if curl -fsS -o /dev/null --max-time 2 {HEALTH} 2>/dev/null; then\n"
            "    __outcome=up; break\n"
            "  fi\n"
            "  kill -0 $__job 2>/dev/null || { __outcome=ended; break; }\n"
            "  sleep 0.2\n"
            "done"
        )
        try:
            outcome = self._step(script, where, START_TIMEOUT + 30, output)
        finally:  # close() stops it, whatever happened
            if job.exists():
                self.job = int(job.read_text())
                self.jobs.append(self.job)
        if outcome == "ended":
            raise SessionError(f"{where}: it ended before serving{self._said(output)}")
        if outcome != "up":
            raise SessionError(f"{where}: {HEALTH} did not answer 200{self._said(output)}")
        return Ran(outcome, output.read_text(errors="replace"))

    def stop(self, where: str) -> str:
        """Ctrl+C in the job's terminal: SIGINT to its process group; then until it has ended and
        port 8000 is closed. Answers the job's exit status."""
        if self.job is None:
            raise SessionError(f"{where}: stop, but nothing was started")
        job, self.job = self.job, None
        try:
            os.killpg(job, signal.SIGINT)
        except ProcessLookupError:
            raise SessionError(f"{where}: what the last start started had ended already") from None
        script = (
            f"if wait {job}; then __outcome=0; else __outcome=$?; fi\n"
            "while (exec 3<>/dev/tcp/127.0.0.1/8000) 2>/dev/null; do sleep 0.1; done"
        )
        return self._step(script, where, STOP_TIMEOUT)

    def close(self) -> None:
        """Whatever still runs: each job stopped as stop() does, the shell ended, and what is
        left of the jobs after 30 s killed."""
        for job in self.jobs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(job, signal.SIGINT)
        if self.shell.poll() is None:
            assert self.shell.stdin is not None
            with contextlib.suppress(BrokenPipeError):
                self.shell.stdin.close()
            try:
                self.shell.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.shell.pid, signal.SIGKILL)
                self.shell.wait()
        deadline = time.monotonic() + 30
        for job in self.jobs:
            with contextlib.suppress(ProcessLookupError):
                while time.monotonic() < deadline:
                    os.killpg(job, 0)
                    time.sleep(0.1)
                os.killpg(job, signal.SIGKILL)
