"""The fenced blocks of a guide, each with the directive before it that says how a test runs it
(docs/self-hosting.md, run by tests/docs/test_self_hosting.py; its image blocks by make
image-test through `blocks(path, "image")`).

A directive is an HTML comment, which a reader of the rendered page never sees, on its own line:
the last line before the block's opening fence that is not blank.

    <!-- doc-test: MODE[, OPTION]... -->

MODE is one of:

- `run`: a shell block, run as written in the guide's shell session; it must exit 0, and a
  command in it that fails fails it. `input="..."` (a Python string literal) is what a person
  types at its prompts.
- `start`: a shell block that keeps running (`make run`): started in the background of the
  session, then waited for until http://127.0.0.1:8000/health answers 200.
- `stop`, the one directive with no block after it: stop what the last `start` started, as
  Ctrl+C in its terminal does (SIGINT to its process group), and wait until it has.
- `output`: what the `run` or `start` block before it printed. Each line of it must be one of
  those printed, in the same order, blanks around them ignored and `...` standing for any text.
- `image`: a docker or compose block, run by make image-test (tests/containers); here it is
  only parsed (`bash -n`).
- `real-host, checked by TOOL`: a block that needs a real host (systemctl, a certificate for a
  public name, a system PostgreSQL), whose content TOOL checks instead: `bash -n` (a shell
  block), `nginx -t` (an nginx block), `caddy validate` (a Caddyfile), `systemd-analyze verify`
  (a drop-in of the unit that `unit=NAME` names, in deploy/systemd), `manage.py check` or
  `manage.py check --deploy` (the NAME=value lines of an environment file).
"""

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

MODES = ("run", "start", "stop", "output", "image", "real-host")
# What checks a real-host block, and the block's language each takes.
TOOLS = {
    "bash -n": ("sh",),
    "nginx -t": ("nginx",),
    "caddy validate": ("caddyfile",),
    "systemd-analyze verify": ("ini",),
    "manage.py check": ("ini",),
    "manage.py check --deploy": ("ini",),
}
# The options each mode takes.
OPTIONS: dict[str, tuple[str, ...]] = {"run": ("input",), "real-host": ("unit",)}
SHELL = ("sh",)

_DIRECTIVE = re.compile(r"^\s*<!--\s*doc-test:(.*?)-->\s*$")
_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<language>[^\s`]*)")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
# A comma outside a double-quoted string ends an item.
_ITEM = re.compile(r'(?:[^,"]|"(?:[^"\\]|\\.)*")+')


@dataclass(frozen=True)
class Directive:
    mode: str
    line: int
    checked_by: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class Block:
    """A fenced block: its language, its text (without the fences), where it is."""

    directive: Directive | None
    language: str
    text: str
    line: int  # of the opening fence, from 1
    section: str  # the heading it is under
    path: Path

    @property
    def mode(self) -> str | None:
        return self.directive.mode if self.directive else None

    @property
    def where(self) -> str:
        return f"{self.path.name}:{self.line} ({self.section})"


def parse_directive(text: str, line: int) -> Directive:
    """`text` is what follows `doc-test:` in the comment."""
    items = [item.strip() for item in _ITEM.findall(text)]
    if not items:
        return Directive("", line, problems=("a directive without a mode",))
    mode, problems = items[0], []
    checked_by = None
    options: dict[str, str] = {}
    if mode not in MODES:
        problems.append(f"unknown mode {mode!r} (one of {', '.join(MODES)})")
    for item in items[1:]:
        if item.startswith("checked by "):
            checked_by = item.removeprefix("checked by ").strip()
            if mode != "real-host":
                problems.append(f"{mode}: only real-host blocks are checked by a tool")
            elif checked_by not in TOOLS:
                problems.append(f"unknown tool {checked_by!r} (one of {', '.join(TOOLS)})")
            continue
        name, equals, value = item.partition("=")
        name = name.strip()
        if not equals or name not in OPTIONS.get(mode, ()):
            problems.append(f"{mode} takes no option {item!r}")
            continue
        value = value.strip()
        if value.startswith('"'):
            try:
                value = ast.literal_eval(value)
            except (SyntaxError, ValueError):
                problems.append(f"{name}: not a string literal: {value}")
                continue
        options[name] = value
    if mode == "real-host" and checked_by is None:
        problems.append("real-host: say what checks it (checked by TOOL)")
    if (checked_by == "systemd-analyze verify") != ("unit" in options):
        problems.append("systemd-analyze verify checks a drop-in of the unit=NAME it names")
    return Directive(mode, line, checked_by, options, tuple(problems))


def read(path: Path) -> list[Block | Directive]:
    """The guide in order: its fenced blocks, and the directives that stand alone."""
    found: list[Block | Directive] = []
    lines = path.read_text().splitlines()
    section = "(top)"
    pending: Directive | None = None
    n = 0
    while n < len(lines):
        line = lines[n]
        fence = _FENCE.match(line)
        if fence:
            indent, mark = len(fence["indent"]), fence["fence"]
            body: list[str] = []
            start = n
            n += 1
            while n < len(lines) and not re.match(
                rf"^\s*{re.escape(mark[0])}{{{len(mark)},}}\s*$", lines[n]
            ):
                body.append(lines[n][indent:] if lines[n][:indent].isspace() else lines[n])
                n += 1
            text = "\n".join(body) + "\n"
            found.append(Block(pending, fence["language"].lower(), text, start + 1, section, path))
            pending = None
            n += 1
            continue
        directive = _DIRECTIVE.match(line)
        if directive:
            if pending is not None:
                found.append(pending)
            pending = parse_directive(directive[1], n + 1)
        elif line.strip():
            heading = _HEADING.match(line)
            if heading:
                section = heading[1]
            if pending is not None:  # text came between it and any block: it stands alone
                found.append(pending)
                pending = None
        n += 1
    if pending is not None:
        found.append(pending)
    return found


def blocks(path: Path, mode: str | None = None) -> list[Block]:
    """The guide's fenced blocks in order, with their directives; only those of `mode` if given
    (make image-test: `blocks(ROOT / "docs" / "self-hosting.md", "image")`)."""
    return [
        item
        for item in read(path)
        if isinstance(item, Block) and (mode is None or item.mode == mode)
    ]


def problems(path: Path) -> list[str]:
    """Everything wrong with the guide's directives: a block without one (nothing may slip
    through untested), an unknown mode, option or tool, a block of a language its mode does not
    run, a directive that stands alone but is not `stop`, and an `output` with nothing before it
    to compare."""
    found: list[str] = []
    last_ran: str | None = None
    for item in read(path):
        if isinstance(item, Directive):
            found += [f"{path.name}:{item.line}: {problem}" for problem in item.problems]
            if item.mode != "stop":
                found.append(f"{path.name}:{item.line}: {item.mode}: no block follows it")
            last_ran = None
            continue
        directive = item.directive
        if directive is None:
            found.append(f"{item.where}: a {item.language or 'plain'} block without a directive")
            continue
        found += [f"{item.where}: {problem}" for problem in directive.problems]
        if directive.mode == "stop":
            found.append(f"{item.where}: stop stands alone: no block after it")
        if directive.mode in ("run", "start", "image") and item.language not in SHELL:
            found.append(f"{item.where}: {directive.mode} runs sh blocks, not {item.language!r}")
        tool = directive.checked_by
        if tool in TOOLS and item.language not in TOOLS[tool]:
            found.append(f"{item.where}: {tool} checks {TOOLS[tool]} blocks, not {item.language!r}")
        if directive.mode == "output" and last_ran is None:
            found.append(f"{item.where}: output with no run or start block before it")
        last_ran = directive.mode if directive.mode in ("run", "start") else None
    return found
