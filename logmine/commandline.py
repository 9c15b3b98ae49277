"""The simple commands a shell command line runs, as words: what executes, not what is quoted.

``gh pr create --body "… uv run --with pytest pytest"`` runs ``gh``; the pytest inside the quoted
body never runs. Segment recognises test commands, and environment detection the tools a session
used, on the words this module returns rather than on the raw text.

What it understands (enough for the commands agents send; an unparsable line gives no command):

* lists and pipelines: ``a && b``, ``a || b``, ``a; b``, ``a | b``, ``a & b``, newlines;
* shell wrappers, recursively: ``bash -lc '…'``, ``sh -c "…"``, ``zsh -c …``;
* leading ``VAR=value`` assignments and ``env [-i] VAR=value cmd`` (the assignments are kept);
* ``cd DIR`` changes the directory of the commands after it (relative to the line's own cwd);
* ``source FILE`` / ``. FILE`` are commands of their own (``source .venv/bin/activate`` matters);
* subshells and groups ``( … )`` / ``{ …; }`` are flattened; ``time``, ``exec``, ``command``,
  ``nohup``, ``timeout N`` and ``xargs`` prefixes are skipped to the command they run.
* ``run_target``: the program a runner starts (``uv run pytest`` → ``pytest``), and JavaScript package
  managers' options and exec commands (``pnpm --filter web exec vitest run`` → ``vitest run``).

Not handled: command substitution (``$(…)`` stays one word), redirections beyond dropping the
operator and its target, here-documents (their bodies are not commands), functions, control flow
keywords (``if``/``for`` bodies are scanned as plain lists, which is what a recogniser wants).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

_SHELLS = {"bash", "sh", "zsh", "dash"}
_PREFIXES = {"time", "exec", "command", "nohup", "builtin", "sudo"}
_KEYWORDS = {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "for", "in", "case", "esac",
             "!", "{", "}", "(", ")"}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# runners that start the program named after their own options: (runner words) -> options taking a value
_RUNNERS: dict[tuple[str, ...], frozenset[str]] = {
    ("uv", "run"): frozenset({"--with", "--with-requirements", "--with-editable", "--python", "-p", "--project",
                              "--directory", "--package", "--extra", "--group", "--env-file", "--index",
                              "--default-index", "--index-url", "--extra-index-url", "--find-links", "-f"}),
    ("uv", "tool", "run"): frozenset({"--with", "--from", "--python", "-p"}),
    ("uvx",): frozenset({"--with", "--from", "--python", "-p"}),
    ("pipx", "run"): frozenset({"--spec", "--python"}),
    ("poetry", "run"): frozenset({"--directory", "-C", "--project", "-P"}),
    ("pipenv", "run"): frozenset(),
    ("pdm", "run"): frozenset({"-p", "--project"}),
    ("conda", "run"): frozenset({"-n", "--name", "-p", "--prefix"}),
    ("micromamba", "run"): frozenset({"-n", "--name", "-p", "--prefix"}),
}
# JavaScript package managers: options before the command that take a value, the commands that run a
# package's program (`pnpm --filter web exec vitest run` starts vitest), and their own commands (any
# other word is a script or a package's program they run: `pnpm vitest run`, `yarn jest`)
_JS_VALUED = frozenset({"--filter", "-F", "--filter-prod", "-C", "--dir", "--prefix", "-w", "--workspace", "--cwd",
                        "--reporter", "--loglevel", "--package", "-p", "-c", "--call"})
_JS_RUNNERS = {"npx": (), "pnpx": (), "bunx": (), "npm": ("exec", "x"), "pnpm": ("exec", "dlx"),
               "yarn": ("exec", "dlx"), "bun": ("x",)}
_JS_OWN = frozenset({"install", "i", "ci", "add", "remove", "rm", "uninstall", "update", "up", "upgrade", "run",
                     "run-script", "test", "t", "start", "create", "init", "publish", "pack", "list", "ls", "why",
                     "outdated", "audit", "store", "config", "link", "unlink", "prune", "rebuild", "import", "fetch",
                     "patch", "licenses", "env", "setup", "info", "view", "version", "cache", "dedupe", "help",
                     "build", "set", "plugin", "node", "npm", "workspaces", "bin", "root", "deploy", "recursive"})
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1[^\n]*\n.*?\n\s*\2\s*(?:\n|$)", re.S)


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """One command the line executes: its words, its ``VAR=value`` prefix, and the ``cd`` before it."""

    argv: tuple[str, ...]
    assignments: tuple[str, ...] = ()
    cd: str | None = None  # the directory ``cd`` moved to before it (joined, relative to the line's cwd)

    @property
    def program(self) -> str:
        """The executable's base name (``.venv/bin/python`` → ``python``)."""
        return self.argv[0].rsplit("/", 1)[-1] if self.argv else ""

    @property
    def text(self) -> str:
        """The words joined by single spaces: what recognisers match against."""
        return " ".join(self.argv)


def simple_commands(line: str, _depth: int = 0) -> list[SimpleCommand]:
    """The simple commands ``line`` runs, in order; ``[]`` when it does not parse."""
    text = _HEREDOC.sub("\n", line).replace("\\\n", " ").replace("\n", " ; ")  # newlines end commands
    words = _words(text)
    if words is None or _depth > 4:
        return []
    found: list[SimpleCommand] = []
    cd: str | None = None
    for segment in _segments(words):
        for command in _command(segment, _depth):
            if command.program == "cd" and not command.argv[1:2] == ("-",):
                target = command.argv[1] if len(command.argv) > 1 else "~"
                cd = target if cd is None or target.startswith(("/", "~")) else f"{cd}/{target}"
                continue
            inner_cd = command.cd if command.cd is None or cd is None or command.cd.startswith("/") \
                else f"{cd}/{command.cd}"
            found.append(SimpleCommand(command.argv, command.assignments, inner_cd or cd))
    return found


_WRITES = frozenset({">", ">>", ">|", "&>", "&>>"})


def written_files(line: str) -> list[str]:
    """The files ``line`` writes by its output redirections (``> F``, ``>> F``, ``&> F``) and ``tee F``,
    each joined to the ``cd`` before it (relative to the line's cwd unless absolute); ``[]`` when it
    does not parse."""
    words = _words(_HEREDOC.sub("\n", line).replace("\\\n", " ").replace("\n", " ; "))
    found: list[str] = []
    cd: str | None = None
    for segment in _segments(words or []):
        if segment[0] == "cd" and len(segment) > 1 and segment[1] != "-":
            cd = segment[1] if cd is None or segment[1].startswith(("/", "~")) else f"{cd}/{segment[1]}"
            continue
        targets = [segment[i + 1] for i, word in enumerate(segment[:-1]) if word in _WRITES]
        if segment[0] == "tee":
            targets += [word for word in segment[1:] if not word.startswith("-") and not _is_operator(word)]
        found += [t if cd is None or t.startswith("/") else f"{cd}/{t}" for t in targets if not _is_operator(t)]
    return found


def _words(line: str) -> list[str] | None:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        return list(lexer)
    except ValueError:  # an unclosed quote
        return None


def _segments(words: list[str]) -> list[list[str]]:
    segments: list[list[str]] = []
    current: list[str] = []
    for word in words:
        if _is_operator(word) and not set(word) & set("<>"):
            if current:
                segments.append(current)
            current = []
        else:
            current.append(word)
    if current:
        segments.append(current)
    return segments


def _command(words: list[str], depth: int) -> list[SimpleCommand]:
    """One segment's command after prefixes, assignments and redirections; wrappers recurse."""
    words = _drop_redirections(words)
    while words and words[0] in _KEYWORDS:
        words = words[1:]
    assignments: list[str] = []
    while words and _ASSIGNMENT.match(words[0]):
        assignments.append(words.pop(0))
    while words:
        head = words[0].rsplit("/", 1)[-1]
        if head in _PREFIXES:
            words = words[1:]
        elif head == "env":
            words = words[1:]
            while words and (words[0].startswith("-") or _ASSIGNMENT.match(words[0])):
                if _ASSIGNMENT.match(words[0]):
                    assignments.append(words[0])
                words = words[1:]
        elif head == "timeout":
            words = [w for i, w in enumerate(words[1:]) if not (i == 0 or w.startswith("-") and i < 2)] \
                if len(words) > 2 else []
        elif head == "xargs":
            words = [w for w in words[1:] if not w.startswith("-")]
        else:
            break
    if not words:
        return []
    if words[0].rsplit("/", 1)[-1] in _SHELLS:
        script = shell_script(words[1:])
        if script is not None:
            return simple_commands(script, depth + 1)
    return [SimpleCommand(tuple(words), tuple(assignments))]


def shell_script(args: list[str]) -> str | None:
    """The script of ``bash [-opts] -c SCRIPT``; None when the shell runs a file or stdin."""
    for i, arg in enumerate(args):
        if arg.startswith("-") and not arg.startswith("--") and "c" in arg[1:]:
            return args[i + 1] if i + 1 < len(args) else None
        if not arg.startswith("-"):
            return None
    return None


def _is_operator(word: str) -> bool:
    return bool(word) and set(word) <= set(";&|()<>")


def _drop_redirections(words: list[str]) -> list[str]:
    """Without ``>``, ``2>&1``, ``< in``… (the operator, its target and a file-descriptor number)."""
    kept: list[str] = []
    skip = False
    for i, word in enumerate(words):
        if skip:
            skip = False
            continue
        if _is_operator(word):  # only redirections are left in a segment
            skip = True
            continue
        if word.isdigit() and i + 1 < len(words) and _is_operator(words[i + 1]):
            continue  # the 2 of 2>&1
        kept.append(word)
    return kept


def run_target(argv: tuple[str, ...]) -> tuple[str, ...]:
    """The words of the program a runner starts (``uv run --with pytest pytest -q`` → ``pytest -q``);
    ``argv`` itself for any other command (and for a runner with nothing to run)."""
    name = argv[0].rsplit("/", 1)[-1]
    if name in _JS_RUNNERS:
        return _js_target(name, argv)
    for words, valued in _RUNNERS.items():
        if (name, *argv[1:len(words)]) != words:
            continue
        rest = list(argv[len(words):])
        while rest and rest[0].startswith("-"):
            option = rest.pop(0)
            if option == "--":
                break
            if option in valued and "=" not in option and rest:
                rest.pop(0)
        return run_target(tuple(rest)) if rest else argv
    return argv


def _js_target(name: str, argv: tuple[str, ...]) -> tuple[str, ...]:
    """``pnpm --filter web exec vitest run`` → ``vitest run``; ``npm -w web test`` → ``npm test``;
    ``yarn workspace web test`` → ``yarn test``; ``pnpm vitest run`` → ``vitest run``; ``npx -y jest``
    → ``jest``: the package manager's own options dropped, the program it starts put in its place."""
    rest = _js_options(argv[1:])
    if name == "yarn" and rest[:1] == ["workspace"] and len(rest) > 2:
        rest = _js_options(rest[2:])  # yarn workspace NAME COMMAND
    if not rest:
        return argv
    if not _JS_RUNNERS[name]:  # npx, pnpx, bunx: what follows is the program
        return run_target(tuple(rest))
    if rest[0] in _JS_RUNNERS[name]:
        started = _js_options(rest[1:])
        return run_target(tuple(started)) if started else argv
    if name != "npm" and rest[0] not in _JS_OWN:
        return run_target(tuple(rest))
    return (argv[0], *rest)


def _js_options(words) -> list[str]:
    """``words`` from the first that is not an option of the package manager (after ``--``, if any)."""
    rest = list(words)
    while rest and rest[0].startswith("-"):
        option = rest.pop(0)
        if option == "--":
            break
        if option in _JS_VALUED and rest:
            rest.pop(0)
    return rest
