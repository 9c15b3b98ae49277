"""Recognise what a shell command does: run tests, edit files, or something else.

The recognisers (regular expressions from the pipeline's ``[segment]``) are matched against the
simple commands a line *executes* (:func:`logmine.commandline.simple_commands`), one at a time, never
against the raw text: ``gh pr create --body "… uv run --with pytest pytest"`` runs ``gh``, not pytest.
Each command is matched as its words joined by spaces, without ``VAR=value`` prefixes, with the
program an environment runner starts in place of the runner (``uv run --with pytest pytest`` and
``poetry run pytest`` are matched as ``pytest``). A line is a test run when one of its commands
matches a test pattern and no exclude pattern; it edits files when one of its commands matches an
edit pattern or the line writes a file by an output redirection (``> out.txt``, ``>> log``, in any
shell it starts; ``2> err`` and ``> /dev/null`` do not count).
"""

from __future__ import annotations

import functools
import re
import shlex
from dataclasses import dataclass

from logmine.commandline import run_target, shell_script, simple_commands
from logmine.pipeline import packaged
from logmine.segment.powershell import as_bash, writes

_WRAPPER = re.compile(r"^\s*(?:/\S*/)?(?:bash|sh|zsh)\s+-l?c\s+(.+)$", re.S)
_CD = re.compile(r"^\s*cd\s+(\"[^\"]+\"|'[^']+'|[^\s;&|]+)\s*(?:&&|;)\s*(.+)$", re.S)
# a heredoc's body; the rest of its opening line stays (``cat <<'EOF' > notes.md``: the redirect is there)
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1([^\n]*)\n.*?\n\s*\2\s*(?:\n|$)", re.S)
_SHELLS = {"bash", "sh", "zsh", "dash"}
_WRITES = {">", ">>", ">|", "&>", "&>>"}


@dataclass(frozen=True, slots=True)
class Unwrapped:
    """A command without its shell wrappers, and the directory it ran in relative to its cwd."""

    command: str
    cd: str | None


def unwrap(command: str) -> Unwrapped:
    """Strip ``bash -lc '…'`` and leading ``cd DIR &&`` layers (repeatedly): how candidates are grouped."""
    cd = None
    text = command.strip()
    while True:
        wrapped = _WRAPPER.match(text)
        if wrapped:
            try:
                parts = shlex.split(wrapped.group(1))
            except ValueError:
                parts = []
            if len(parts) == 1:
                text = parts[0].strip()
                continue
        moved = _CD.match(text)
        if moved:
            target = moved.group(1).strip("'\"")
            cd = target if cd is None or target.startswith("/") else f"{cd}/{target}"
            text = moved.group(2).strip()
            continue
        return Unwrapped(text, cd)


def executed(command: str) -> list[str]:
    """The texts the recognisers match: one per simple command ``command`` runs, runners unwrapped."""
    return [" ".join(run_target(c.argv)) for c in simple_commands(command) if c.argv]


def writes_file(command: str, _depth: int = 0) -> bool:
    """Does the line redirect output into a file (not ``/dev/null``, not a file descriptor)?"""
    lexer = shlex.shlex(_HEREDOC.sub(lambda m: m[3] + "\n", command), posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        words = list(lexer)
    except ValueError:
        return False
    for i, word in enumerate(words):
        target = words[i + 1] if i + 1 < len(words) else ""
        if word in _WRITES and target and target != "/dev/null" and not set(target) <= set(";&|()<>"):
            if not (i > 0 and words[i - 1].isdigit() and words[i - 1] != "1"):  # 2> err: a log, not an edit
                return True
        if word.rsplit("/", 1)[-1] in _SHELLS and _depth < 4:
            script = shell_script(words[i + 1:])
            if script is not None and writes_file(script, _depth + 1):
                return True
    return False


class CommandClassifier:
    """Compiled recognisers from the ``[segment]`` section of a pipeline."""

    def __init__(self, segment_config: dict):
        self._tests = [re.compile(p) for p in segment_config["test_commands"]]
        self._not_tests = [re.compile(p) for p in segment_config["test_command_excludes"]]
        self._edits = [re.compile(p) for p in segment_config["file_edit_patterns"]]
        self._test_files = [re.compile(p) for p in segment_config["test_file_patterns"]]

    def is_test(self, command: str) -> bool:
        """Does one of the commands the line executes run tests?"""
        return any(self.is_test_run(text) for text in executed(command))

    def is_test_run(self, text: str) -> bool:
        """Is one executed command (its words joined, runner unwrapped) a test run?"""
        return any(p.search(text) for p in self._tests) and not any(p.search(text) for p in self._not_tests)

    def edits_files(self, command: str) -> bool:
        """Does the command (possibly) change files in ways no patch event records? A PowerShell
        command (a Windows session's) is judged as bash (:mod:`logmine.segment.powershell`)."""
        bash = as_bash(command)
        if bash is None:
            return writes(command)
        return any(p.search(text) for text in executed(bash) for p in self._edits) or writes_file(bash)

    def redone(self, command: str) -> bool:
        """Is the command redone before later tasks as an earlier edit: it may change files and runs no tests?"""
        return not self.is_test(command) and self.edits_files(command)

    def is_test_file(self, path: str) -> bool:
        return any(p.search(path) for p in self._test_files)


@functools.cache
def packaged_classifier() -> CommandClassifier:
    """The packaged pipeline's recognisers, compiled once per process: which commands may edit files,
    for the stages that judge a session's recorded work (chained sessions, a rebuilt start)."""
    return CommandClassifier(packaged("segment"))
