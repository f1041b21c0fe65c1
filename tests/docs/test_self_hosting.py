"""docs/self-hosting.md, every block as written (its directives: tests/docs/blocks.py).

The home server's blocks run in order in one shell, in a fresh clone of the repository on a
machine of its own (tests/docs/session.py): `make run` really serves on port 8000 and is reached
as raspberrypi.local, the password is changed at its prompt, a backup taken while it serves, the
code pulled, the backup restored, and what each block is shown to print is what it printed. The
blocks for a real host are checked by the tool that reads them; the container blocks, which
make image-test runs (tests/containers), are parsed.
"""

import re
import secrets
import shlex
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import trustme

from tests.deploy.systemd import UNITS, install, render, verify
from tests.docs.blocks import Block, Directive, blocks, problems, read
from tests.docs.session import Ran, Session, clone, person
from tests.servers import ROOT

pytestmark = pytest.mark.e2e

GUIDE = ROOT / "docs" / "self-hosting.md"
# The public instance's guide has blocks for a real host only, checked by the same tools.
PUBLIC = ROOT / "docs" / "public-instance.md"
INSTALL = "scripts/install-servers.sh nginx caddy installs it (make test does)"
# Where the settings an environment file may name are read.
READ_BY = [
    ROOT / "config" / "settings" / "base.py",
    ROOT / "config" / "gunicorn.py",
    ROOT / "config" / "gunicorn_home.py",
    ROOT / "home" / "management" / "commands" / "serve.py",
]
# Units of Debian's own packages that the guide may name beside the project's.
SYSTEM_UNITS = {"nginx", "caddy", "postgresql", "redis-server"}


def _tool(name: str) -> str:
    """Fails, never skips, without it."""
    found = shutil.which(name) or next(
        (str(p) for p in (Path("/usr/sbin") / name, Path("/sbin") / name) if p.exists()), None
    )
    if found is None:
        pytest.fail(f"{name} is missing: {INSTALL}")
    return found


def shown(printed: str, expected: str) -> str | None:
    """None when every line of `expected` is a line of `printed`, in the same order, blanks
    around them ignored and `...` standing for any text; else the first line that is not."""
    lines = [line.strip() for line in printed.splitlines()]
    at = 0
    for wanted in filter(None, (line.strip() for line in expected.splitlines())):
        pattern = re.compile(".*".join(re.escape(part) for part in wanted.split("...")))
        while at < len(lines) and not pattern.fullmatch(lines[at]):
            at += 1
        if at == len(lines):
            return wanted
        at += 1
    return None


# --- The directives ----------------------------------------------------------------------------


def test_every_block_says_how_it_is_tested() -> None:
    assert problems(GUIDE) == []
    assert problems(PUBLIC) == []
    assert {block.mode for block in blocks(PUBLIC)} == {"real-host"}
    modes = {block.mode for block in blocks(GUIDE)}
    assert {"run", "start", "output", "image", "real-host"} <= modes
    assert any(isinstance(item, Directive) and item.mode == "stop" for item in read(GUIDE))


def test_a_block_without_a_directive_is_found(tmp_path: Path) -> None:
    """The check above really looks: a guide with a block left bare, a mistyped mode, a tool it
    does not know, and a directive that stands alone but is not a stop."""
    guide = tmp_path / "guide.md"
    guide.write_text(
        "# Guide\n\n```sh\nmake run\n```\n\n"
        "<!-- doc-test: runn -->\n```sh\ntrue\n```\n\n"
        "<!-- doc-test: real-host, checked by shellcheck -->\n```sh\ntrue\n```\n\n"
        "<!-- doc-test: start -->\n\nSome text.\n\n"
        '<!-- doc-test: run, input="a\\nb\\n" -->\n```sh\ncat\n```\n'
    )

    found = problems(guide)

    assert [re.sub(r"^guide\.md:\d+(?: \(Guide\))?: ", "", line) for line in found] == [
        "a sh block without a directive",
        "unknown mode 'runn' (one of run, start, stop, output, image, real-host)",
        "unknown tool 'shellcheck' (one of bash -n, nginx -t, caddy validate, "
        "systemd-analyze verify, manage.py check, manage.py check --deploy)",
        "start: no block follows it",
    ]
    assert blocks(guide, "run")[-1].directive.options == {"input": "a\nb\n"}  # type: ignore[union-attr]


# --- The home server, run --------------------------------------------------------------------


def test_the_home_server_blocks_run_as_written(tmp_path: Path) -> None:
    """Each run, start, stop and output in the guide's order, in one shell."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    shell = Session(clone(work, home), home, work)
    try:
        last: Ran | None = None
        for item in read(GUIDE):
            if isinstance(item, Directive):
                assert item.mode == "stop", item
                shell.stop(f"{GUIDE.name}:{item.line} (stop)")
                last = None
            elif item.mode == "run":
                assert item.directive is not None
                last = shell.run(item.text, item.where, item.directive.options.get("input"))
            elif item.mode == "start":
                last = shell.start(item.text, item.where)
            elif item.mode == "output":
                assert last is not None, item.where
                missing = shown(last.output, item.text)
                said = last.output[-5000:]
                assert missing is None, f"{item.where}: not printed: {missing!r}\n---\n{said}"
    finally:
        shell.close()


def test_shown_takes_the_lines_in_order_with_any_text_for_dots() -> None:
    printed = "  one: 1\nnoise\n  two: 2 and more\nthree\n"
    assert shown(printed, "one: ...\ntwo: 2 ...\n\nthree") is None
    assert shown(printed, "two: 2 ...\none: 1") == "one: 1"
    assert shown(printed, "four") == "four"


# --- The blocks for a real host, checked -------------------------------------------------------


def _bash_n(block: Block, tmp_path: Path) -> None:
    parsed = subprocess.run(["bash", "-n"], input=block.text, capture_output=True, text=True)
    assert parsed.returncode == 0, f"{block.where}: bash -n: {parsed.stderr}"


def _certificate(names: list[str], tmp_path: Path) -> tuple[Path, Path]:
    """A certificate for `names` and its key (trustme's), in place of the ones the guide's
    blocks name, which certbot or Caddy make on a real host."""
    issued = trustme.CA().issue_cert(*names)
    chain, key = tmp_path / "fullchain.pem", tmp_path / "privkey.pem"
    for n, pem in enumerate(issued.cert_chain_pems):
        with open(chain, "ab" if n else "wb") as file:
            file.write(pem.bytes())
    issued.private_key_pem.write_to_path(str(key))
    return chain, key


def _nginx_t(block: Block, tmp_path: Path) -> None:
    """The server blocks in a minimal nginx.conf of their own, as sites-available files are in
    Debian's, with every file nginx writes in `tmp_path`; the certificates trustme's."""
    nginx = _tool("nginx")
    names = re.findall(r"^\s*server_name\s+([^;]+);", block.text, flags=re.MULTILINE)
    chain, key = _certificate(sorted({n for line in names for n in line.split()}), tmp_path)
    site = re.sub(r"(\bssl_certificate)\s+\S+;", rf"\1 {chain};", block.text)
    site = re.sub(r"(\bssl_certificate_key)\s+\S+;", rf"\1 {key};", site)
    (tmp_path / "site.conf").write_text(site)
    temp = "\n".join(
        f"    {kind}_temp_path {tmp_path / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    (tmp_path / "nginx.conf").write_text(
        f"pid {tmp_path / 'nginx.pid'};\nerror_log {tmp_path / 'error.log'};\nevents {{}}\n"
        f"http {{\n    access_log {tmp_path / 'access.log'};\n{temp}\n"
        f"    include {tmp_path / 'site.conf'};\n}}\n"
    )
    tested = subprocess.run(
        [nginx, "-t", "-e", str(tmp_path / "error.log"), "-p", f"{tmp_path}/",
         "-c", str(tmp_path / "nginx.conf")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    said = tested.stdout + tested.stderr
    assert tested.returncode == 0, f"{block.where}: nginx -t:\n{said}"
    assert "[warn]" not in said, f"{block.where}: nginx -t:\n{said}"


def _caddy_validate(block: Block, tmp_path: Path) -> None:
    """The Caddyfile as written (Caddy gets its certificates itself; one it is given on a `tls`
    line is trustme's here), with Caddy's own folders in `tmp_path`; a warning fails it, among
    them Caddy's own "not formatted"."""
    caddy = _tool("caddy")
    text = block.text
    if re.search(r"^\s*tls\s+/\S+\s+/\S+", text, flags=re.MULTILINE):
        names = re.findall(r"^([^\s{]+?)(?::\d+)?\s*\{", text, flags=re.MULTILINE)
        chain, key = _certificate(names, tmp_path)
        text = re.sub(r"^(\s*tls)\s+/\S+\s+/\S+", rf"\1 {chain} {key}", text, flags=re.MULTILINE)
    (tmp_path / "Caddyfile").write_text(text)
    folders = {name: str(tmp_path / name) for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME")}
    tested = subprocess.run(
        [caddy, "validate", "--adapter", "caddyfile", "--config", str(tmp_path / "Caddyfile")],
        capture_output=True, text=True, timeout=60,
        env={**person(), "HOME": str(tmp_path), **folders},
    )  # fmt: skip
    said = tested.stdout + tested.stderr
    assert tested.returncode == 0, f"{block.where}: caddy validate:\n{said}"
    assert not re.search(r'"level":"(warn|error)"', said), f"{block.where}: caddy validate:\n{said}"


def _drop_in(block: Block, tmp_path: Path) -> list[str]:
    """What systemd-analyze verify finds wrong in the unit with the block as its drop-in, both
    as they would be installed here (tests/deploy/test_systemd.py)."""
    assert block.directive is not None
    unit = block.directive.options["unit"]
    paths = install(tmp_path, {unit: (UNITS / unit).read_text()})
    drop_ins = tmp_path / f"{unit}.d"
    drop_ins.mkdir()
    (drop_ins / "override.conf").write_text(render(block.text, tmp_path))
    return verify(_tool("systemd-analyze"), paths)


def _systemd_analyze_verify(block: Block, tmp_path: Path) -> None:
    assert _drop_in(block, tmp_path) == [], block.where


def _environment(block: Block) -> dict[str, str]:
    settings: dict[str, str] = {}
    code = "\n".join(path.read_text() for path in READ_BY)
    for line in block.text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        found = re.fullmatch(r"([A-Z][A-Z0-9_]*)=(.*)", line.strip())
        assert found, f"{block.where}: not NAME=value: {line!r}"
        assert f'"{found[1]}"' in code, f"{block.where}: no setting {found[1]} is read"
        settings[found[1]] = found[2]
    return settings


def _manage_py_check(block: Block, tmp_path: Path, *deploy: str) -> None:
    """The settings load with the block's values and Django's checks pass, warnings included.
    The full layout's SECRET_KEY, which the guide makes with a command before, is made here the
    same way when the block names none; the home server makes its own in DATA_DIR."""
    settings = _environment(block)
    if "DATABASE_URL" in settings:
        settings.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
    checked = subprocess.run(
        [sys.executable, "manage.py", "check", *deploy, "--fail-level", "WARNING"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={**person(), "HOME": str(tmp_path), "DATA_DIR": str(tmp_path / "data"), **settings},
    )  # fmt: skip
    assert checked.returncode == 0, f"{block.where}: {checked.stdout}{checked.stderr}"


CHECKS = {
    "bash -n": _bash_n,
    "nginx -t": _nginx_t,
    "caddy validate": _caddy_validate,
    "systemd-analyze verify": _systemd_analyze_verify,
    "manage.py check": _manage_py_check,
    "manage.py check --deploy": lambda block, tmp: _manage_py_check(block, tmp, "--deploy"),
}


def _checked_by(block: Block) -> str | None:
    return block.directive.checked_by if block.directive else None


@pytest.mark.parametrize(
    "block",
    blocks(GUIDE, "real-host") + blocks(PUBLIC, "real-host"),
    ids=lambda block: block.where,
)
def test_a_block_for_a_real_host_passes_its_tool(block: Block, tmp_path: Path) -> None:
    tool = _checked_by(block)
    assert tool in CHECKS, block.where
    CHECKS[tool](block, tmp_path)


@pytest.mark.parametrize("block", blocks(GUIDE, "image"), ids=lambda block: f"line {block.line}")
def test_a_container_block_parses(block: Block, tmp_path: Path) -> None:
    """make image-test runs them (tests/containers); a shell must at least read them."""
    _bash_n(block, tmp_path)


def test_the_tools_refuse_what_is_wrong(tmp_path: Path) -> None:
    """Each check fails what it should, so that a pass means something: a drop-in with a
    mistyped key (the drop-in is read), an nginx block with a mistyped directive, a Caddyfile
    indented with spaces, a setting the code does not read."""
    real_host = blocks(GUIDE, "real-host")
    drop_ins = [b for b in real_host if _checked_by(b) == "systemd-analyze verify"]
    assert drop_ins
    for n, drop_in in enumerate(drop_ins):
        broken = replace(drop_in, text=drop_in.text + "Restartt=always\n")
        (tmp_path / f"unit{n}").mkdir()
        assert any("Restartt" in problem for problem in _drop_in(broken, tmp_path / f"unit{n}"))

    [nginx, *_] = [b for b in real_host if _checked_by(b) == "nginx -t"]
    wrong = replace(nginx, text=nginx.text.replace("proxy_pass", "proxy_passs"))
    (tmp_path / "nginx").mkdir()
    with pytest.raises(AssertionError, match="proxy_passs"):
        _nginx_t(wrong, tmp_path / "nginx")

    [caddy, *_] = [b for b in real_host if _checked_by(b) == "caddy validate"]
    spaces = replace(caddy, text=caddy.text.replace("\t", "    "))
    (tmp_path / "caddy").mkdir()
    with pytest.raises(AssertionError, match="not formatted"):
        _caddy_validate(spaces, tmp_path / "caddy")

    [env, *_] = [b for b in real_host if _checked_by(b) == "manage.py check --deploy"]
    typo = replace(env, text=env.text.replace("PUBLIC_URL", "PUBLC_URL"))
    with pytest.raises(AssertionError, match="no setting PUBLC_URL"):
        _environment(typo)


# --- What the guide names ----------------------------------------------------------------------


def _commands(block: Block) -> list[list[str]]:
    """The block's commands, each as its words, continuation lines joined."""
    joined = re.sub(r"\\\n", " ", block.text)
    commands = []
    for line in joined.splitlines():
        if line.strip():
            commands.append(shlex.split(line, comments=True))
    return commands


def test_the_guide_names_only_units_commands_and_files_there_are() -> None:
    from django.core.management import get_commands

    text = GUIDE.read_text()
    units = {path.name.rsplit(".", 1)[0] for path in UNITS.glob("podsync-*")}
    named: set[str] = set()
    for block in blocks(GUIDE):
        if block.language != "sh":
            continue
        for words in _commands(block):
            if "systemctl" in words:
                verb = words.index("systemctl") + 1
                named |= {w for w in words[verb + 1 :] if not w.startswith("-")}
            if "journalctl" in words:
                named |= {words[n + 1] for n, w in enumerate(words[:-1]) if w == "-u"}
    assert named, "no unit named"
    for name in named:
        base = re.sub(r"\.(service|timer)$", "", name)
        assert base in units | SYSTEM_UNITS or name == "podsync-*", name

    for command in set(re.findall(r"manage\.py (\w+)", text)):
        assert command in get_commands(), command

    files = r"\b(deploy/[\w./-]*\w|compose(?:\.full)?\.yaml|Containerfile)"
    for path in set(re.findall(files, text)):
        assert (ROOT / path).exists(), path
