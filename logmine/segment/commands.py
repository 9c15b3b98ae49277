"""Recognise what a shell command does: run tests, edit files, or something else.

Commands are matched after unwrapping the shells Codex and models put around them
(``bash -lc '…'``, ``cd DIR && …``), so ``cd pkg && python -m pytest -q`` is a test run in ``pkg``.
The recognisers are regular expressions from the pipeline config (``[segment]``).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

_WRAPPER = re.compile(r"^\s*(?:/\S*/)?(?:bash|sh|zsh)\s+-l?c\s+(.+)$", re.S)
_CD = re.compile(r"^\s*cd\s+(\"[^\"]+\"|'[^']+'|[^\s;&|]+)\s*(?:&&|;)\s*(.+)$", re.S)


@dataclass(frozen=True, slots=True)
class Unwrapped:
    """A command without its shell wrappers, and the directory it ran in relative to its cwd."""

    command: str
    cd: str | None


def unwrap(command: str) -> Unwrapped:
    """Strip ``bash -lc '…'`` and leading ``cd DIR &&`` layers (repeatedly)."""
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


class CommandClassifier:
    """Compiled recognisers from the ``[segment]`` section of a pipeline."""

    def __init__(self, segment_config: dict):
        self._tests = [re.compile(p) for p in segment_config["test_commands"]]
        self._not_tests = [re.compile(p) for p in segment_config["test_command_excludes"]]
        self._edits = [re.compile(p) for p in segment_config["file_edit_patterns"]]
        self._test_files = [re.compile(p) for p in segment_config["test_file_patterns"]]

    def is_test(self, command: str) -> bool:
        text = unwrap(command).command
        return any(p.search(text) for p in self._tests) and not any(p.search(text) for p in self._not_tests)

    def edits_files(self, command: str) -> bool:
        """Does the command (possibly) change files in ways no patch event records?"""
        text = unwrap(command).command
        return any(p.search(text) for p in self._edits)

    def is_test_file(self, path: str) -> bool:
        return any(p.search(path) for p in self._test_files)
