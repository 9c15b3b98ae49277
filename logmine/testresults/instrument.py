"""Rewrite a test command so that its runner also writes a report logmine can read test by test.

:func:`instrument` recognises the runner of the command's last simple command, the way agents write
them (``pytest -q``, ``python -m pytest``, ``uv run pytest``, ``.venv/bin/pytest``, ``cd sub && pytest``,
``python -m unittest``, ``npx vitest run``, ``pnpm --filter web exec vitest run``, ``npx jest``,
``node --test``, ``go test ./...``, ``cargo test``, ``bash -lc '…'`` around any of them, ``npm test`` when
the package's ``test`` script is one of them) and adds the runner's own reporting flags:

============ ======================================================================= ==================
runner       added                                                                   report read from
============ ======================================================================= ==================
pytest       ``--junitxml=FILE -o junit_family=xunit1 -rA`` (xunit1: each case's file) the JUnit file
unittest     ``-v`` (one line per test, on stderr)                                   the output
vitest       ``--reporter=default --reporter=json --outputFile=FILE``                the JSON file
jest         ``--json --outputFile=FILE``                                            the JSON file
node         ``--test-reporter=spec`` to stdout and ``--test-reporter=tap`` to FILE    the TAP file
go           ``-json``                                                               the output
cargo        nothing (a ``-q`` is dropped, so that libtest names each test)          the output
============ ======================================================================= ==================

The flags choose reports only: the same tests run and the command's exit code means what it meant.
Everything else in the line stays as written (the edits are made in place; quoting, ``$VAR`` and globs
are untouched). A command this module cannot rewrite safely gives None: an unknown runner, a runner
piped into another command or followed by one (``pytest | tail``, ``pytest; echo done``), output
redirected elsewhere than ``2>&1``, a subshell, a command substitution, a runner already told where to
write a report, or ``pnpm -r`` (several runs, one report file).
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass

from ._shell import Token, tokenize

RUNNERS = ("pytest", "unittest", "vitest", "jest", "node", "go", "cargo")

_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PYTHON = re.compile(r"^python(\d+(\.\d+)*)?$")
_PYTHON_FLAGS = re.compile(r"^-[BEIOPqsSuvbd]+$")
_SHELLS = {"bash", "sh", "zsh", "dash"}
# launchers that start the program named after their options: launcher words -> options taking a value
_LAUNCHERS: dict[tuple[str, ...], frozenset[str]] = {
    ("uv", "run"): frozenset({"--with", "--with-requirements", "--with-editable", "--python", "-p", "--project",
                              "--directory", "--package", "--extra", "--group", "--env-file", "--index",
                              "--default-index", "--index-url", "--extra-index-url", "--find-links", "-f"}),
    ("uvx",): frozenset({"--with", "--from", "--python", "-p"}),
    ("poetry", "run"): frozenset({"--directory", "-C", "--project", "-P"}),
    ("pipenv", "run"): frozenset(),
    ("pdm", "run"): frozenset({"-p", "--project"}),
    ("npx",): frozenset({"-p", "--package"}),
    ("npm", "exec"): frozenset({"-p", "--package", "-w", "--workspace"}),
    ("bunx",): frozenset(),
}
# pnpm and yarn run a package's program with or without ``exec``: their options before it
_JS_MANAGERS = {"pnpm", "yarn"}
_JS_VALUED = frozenset({"--filter", "-F", "--filter-prod", "-C", "--dir", "--cwd", "--reporter", "--loglevel"})
_JS_MANY = frozenset({"-r", "--recursive", "--workspaces", "-ws"})
_NODE_VALUED = frozenset({"-r", "--require", "--import", "--loader", "--experimental-loader", "-C", "--conditions",
                          "--env-file", "--test-name-pattern", "--test-concurrency", "--test-timeout",
                          "--test-shard", "--test-skip-pattern", "--input-type"})
_VITEST_OTHER_MODES = {"watch", "dev", "bench", "list", "init", "typecheck"}


@dataclass(frozen=True, slots=True)
class Instrumented:
    """A rewritten test command: ``command`` to run instead, the ``runner`` recognised (one of
    :data:`RUNNERS`), and ``report_file``, the file the runner writes its report to (None where the
    report is the command's output: unittest, go, cargo)."""

    command: str
    runner: str
    report_file: str | None


@dataclass(frozen=True, slots=True)
class _Plan:
    runner: str
    at: int  # where ``flags`` go in the text
    flags: str  # with a leading space; empty for none
    report_file: str | None
    cut: tuple[tuple[int, int], ...] = ()  # spans of words to drop


def instrument(command: str, report_dir: str, *,
               package_scripts: Mapping[str, str] | None = None) -> Instrumented | None:
    """``command`` rewritten so that its test runner also writes a report under ``report_dir`` (an
    absolute path as the command will see it: a ``cd`` in the command does not move it), or None when
    the runner is unknown or the line cannot be rewritten safely.

    ``package_scripts`` is the ``scripts`` table of the package.json ``npm test`` would read: only with
    it is ``npm test`` recognised, and only when its ``test`` script is a vitest, jest or ``node --test``
    command (the flags go after ``--``, which npm hands to the script)."""
    if not posixpath.isabs(report_dir):
        raise ValueError(f"report_dir must be absolute, got {report_dir!r}")
    return _instrument(command, report_dir, package_scripts)


def _instrument(command: str, report_dir: str, scripts: Mapping[str, str] | None) -> Instrumented | None:
    tokens = tokenize(command)
    words = _runner_segment(tokens) if tokens else None
    if not words:
        return None
    program = _program(words)
    script = _shell_script(program)
    if script is not None:
        inner = _instrument(script.text, report_dir, scripts)
        if inner is None:
            return None
        wrapped = command[:script.start] + shlex.quote(inner.command) + command[script.end:]
        return Instrumented(wrapped, inner.runner, inner.report_file)
    plan = _plan(program, report_dir, scripts)
    if plan is None:
        return None
    return Instrumented(_apply(command, plan), plan.runner, plan.report_file)


def _runner_segment(tokens: list[Token]) -> list[Token] | None:
    """The words of the line's last simple command, when it is the one whose exit code is the line's
    and its output goes where the line's does: after ``&&`` or ``;`` (or alone), ``2>&1`` at most."""
    while tokens and tokens[-1].kind == "op" and tokens[-1].text == ";":
        tokens = tokens[:-1]
    if any(t.kind == "op" and t.text in ("(", ")", ";;") for t in tokens):
        return None
    ops = [n for n, t in enumerate(tokens) if t.kind == "op"]
    if ops and tokens[ops[-1]].text not in ("&&", ";"):
        return None
    segment = tokens[ops[-1] + 1:] if ops else tokens
    if any(t.kind == "redirect" and t.text.replace(" ", "") != "2>&1" for t in segment):
        return None
    return [t for t in segment if t.kind == "word"]


def _program(words: list[Token]) -> list[Token]:
    """``words`` from the program they run: past ``VAR=value``, ``env VAR=value``, ``time``, ``exec``,
    ``command`` and ``timeout [-k D] [-s SIG] DURATION``."""
    i = 0
    while i < len(words):
        text = words[i].text
        if _ASSIGNMENT.match(text) or text in ("env", "time", "exec", "command"):
            i += 1
        elif text == "timeout":
            i += 1
            while i < len(words) and words[i].text.startswith("-"):
                i += 2 if words[i].text in ("-k", "-s", "--kill-after", "--signal") else 1
            i += 1  # the duration
        else:
            break
    return words[i:]


def _shell_script(words: list[Token]) -> Token | None:
    """The script of ``bash -lc 'SCRIPT'`` (``sh``, ``zsh``, ``dash``; ``-c`` alone or among other short
    options), when nothing follows it."""
    if not words or posixpath.basename(words[0].text) not in _SHELLS:
        return None
    options = [w.text for w in words[1:-1]]
    if len(words) < 3 or not all(re.fullmatch(r"-[a-z]+", o) for o in options):
        return None
    return words[-1] if any("c" in o for o in options) else None


def _launched(words: list[Token]) -> list[Token]:
    """``words`` from the program a launcher starts (``uv run pytest`` → ``pytest``), repeatedly; empty
    when the launcher would run it more than once (``pnpm -r exec vitest``)."""
    while words:
        texts = [w.text for w in words]
        key = next((k for k in _LAUNCHERS if tuple(texts[:len(k)]) == k), None)
        if key is not None:
            words = _past_options(words, len(key), _LAUNCHERS[key])
        elif texts[0] in _JS_MANAGERS and len(texts) > 1:
            if any(t in _JS_MANY for t in texts[1:]):
                return []
            words = _past_options(words, 1, _JS_VALUED)
            if words and words[0].text == "exec":
                words = words[1:]
            return words
        else:
            return words
    return words


def _past_options(words: list[Token], i: int, valued: frozenset[str]) -> list[Token]:
    while i < len(words) and words[i].text.startswith("-"):
        text = words[i].text
        i += 1
        if text == "--":
            break
        if text in valued:
            i += 1
    return words[i:]


def _plan(words: list[Token], report_dir: str, scripts: Mapping[str, str] | None) -> _Plan | None:
    words = _launched(words)
    if not words:
        return None
    name = posixpath.basename(words[0].text)
    if name in ("pytest", "py.test"):
        return _pytest(words, 1, report_dir)
    if _PYTHON.match(name):
        return _python(words, report_dir)
    builders = {"node": _node, "nodejs": _node, "vitest": _vitest, "jest": _jest, "go": _go, "cargo": _cargo}
    if name in builders:
        return builders[name](words, report_dir)
    if name == "npm" and scripts is not None:
        return _npm(words, report_dir, scripts)
    return None


def _end_of_options(words: list[Token], start: int) -> int:
    """Where flags appended to a runner's arguments go: after its last word, or before a ``--``."""
    rest = [w for w in words[start:] if w.text == "--"]
    return rest[0].start - 1 if rest else words[-1].end


def _python(words: list[Token], report_dir: str) -> _Plan | None:
    """``python [-B -u -X opt -W opt …] -m pytest|unittest …``."""
    i = 1
    while i < len(words) and words[i].text != "-m":
        text = words[i].text
        if text in ("-W", "-X"):
            i += 2
        elif _PYTHON_FLAGS.match(text) or text.startswith(("-W", "-X")):
            i += 1
        else:
            return None
    module = words[i + 1].text if i + 1 < len(words) else None
    if module == "pytest":
        return _pytest(words, i + 2, report_dir)
    if module == "unittest":
        return _Plan("unittest", _end_of_options(words, i + 2), " -v", None)
    return None


def _pytest(words: list[Token], start: int, report_dir: str) -> _Plan | None:
    if any(w.text.startswith(("--junitxml", "--junit-xml", "--junitprefix", "--junit-prefix")) for w in words):
        return None
    report = posixpath.join(report_dir, "pytest-junit.xml")
    flags = f" {shlex.quote('--junitxml=' + report)} -o junit_family=xunit1 -rA"
    return _Plan("pytest", _end_of_options(words, start), flags, report)


def _node(words: list[Token], report_dir: str) -> _Plan | None:
    """``node [options] --test [files]``: TAP to the report file, the human reporter to stdout."""
    i = 1
    while i < len(words) and words[i].text.startswith("-"):
        text = words[i].text
        if text.startswith("--test-reporter"):
            return None
        if text == "--test":
            report = posixpath.join(report_dir, "node-test.tap")
            flags = (" --test-reporter=spec --test-reporter-destination=stdout --test-reporter=tap "
                     + shlex.quote("--test-reporter-destination=" + report))
            if any(w.text.startswith("--test-reporter") for w in words[i:]):
                return None
            return _Plan("node", words[i].end, flags, report)
        i += 2 if text in _NODE_VALUED else 1
    return None


def _vitest(words: list[Token], report_dir: str) -> _Plan | None:
    """``vitest [run] …`` (no other mode: watch, bench, list)."""
    i = 1
    if len(words) > 1 and words[1].text in _VITEST_OTHER_MODES:
        return None
    if len(words) > 1 and words[1].text == "run":
        i = 2
    if any(w.text.startswith(("--reporter", "--outputFile")) for w in words):
        return None
    report = posixpath.join(report_dir, "vitest.json")
    flags = " --reporter=default --reporter=json " + shlex.quote("--outputFile=" + report)
    return _Plan("vitest", words[i - 1].end, flags, report)


def _jest(words: list[Token], report_dir: str) -> _Plan | None:
    if any(w.text.startswith(("--json", "--outputFile")) for w in words):
        return None
    report = posixpath.join(report_dir, "jest.json")
    return _Plan("jest", words[0].end, " --json " + shlex.quote("--outputFile=" + report), report)


def _go(words: list[Token], report_dir: str) -> _Plan | None:
    """``go test …``: ``-json`` (test2json's events on stdout), unless it is there already."""
    if len(words) < 2 or words[1].text != "test":
        return None
    has_json = any(w.text in ("-json", "--json", "-json=true") for w in words[2:])
    return _Plan("go", words[1].end, "" if has_json else " -json", None)


def _cargo(words: list[Token], report_dir: str) -> _Plan | None:
    """``cargo [+toolchain] test …``: libtest names each test unless quiet, so cargo's ``-q`` goes; a
    libtest argument that changes the format (after ``--``) makes the command one not rewritten."""
    i = 2 if len(words) > 1 and words[1].text.startswith("+") else 1
    if len(words) <= i or words[i].text != "test":
        return None
    texts = [w.text for w in words]
    split = texts.index("--") if "--" in texts else len(texts)
    if any(t in ("-q", "--quiet", "-Z") or t.startswith("--format") for t in texts[split:]):
        return None
    cut = tuple((w.start, w.end) for w in words[i + 1:split] if w.text in ("-q", "--quiet"))
    return _Plan("cargo", words[-1].end, "", None, cut)


def _npm(words: list[Token], report_dir: str, scripts: Mapping[str, str]) -> _Plan | None:
    """``npm test [-- args]`` (``npm t``, ``npm run test``) whose ``test`` script is a plain vitest, jest
    or ``node --test`` command: the runner's flags go to the script after npm's ``--``."""
    texts = [w.text for w in words]
    if texts[1:2] in (["test"], ["t"], ["tst"]):
        i = 2
    elif texts[1:3] in (["run", "test"], ["run-script", "test"]):
        i = 3
    else:
        return None
    if len(texts) > i and texts[i] != "--":
        return None
    script = tokenize(scripts.get("test", ""))
    if not script or any(t.kind != "word" for t in script):
        return None
    plan = _plan(_program(script), report_dir, None)
    if plan is None or plan.runner not in ("vitest", "jest", "node") or plan.cut:
        return None
    if plan.runner == "node" and plan.at != script[-1].end:
        return None  # node takes options only before its test files
    separator = "" if "--" in texts[i:] else " --"
    return _Plan(plan.runner, words[-1].end, separator + plan.flags, plan.report_file)


def _apply(command: str, plan: _Plan) -> str:
    edits = [(start, end, "") for start, end in plan.cut] + [(plan.at, plan.at, plan.flags)]
    for start, end, text in sorted(edits, reverse=True):
        while not text and start > 0 and command[start - 1] in " \t":
            start -= 1  # a dropped word takes the blank before it along
        command = command[:start] + text + command[end:]
    return command
