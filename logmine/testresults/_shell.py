"""Just enough of the shell's grammar to rewrite a test command without changing what else it does.

:func:`tokenize` splits a command line into words, control operators and redirections, keeping each
token's place in the text, so that :mod:`.instrument` edits the line in place (an inserted flag, a
removed ``-q``) and leaves every other character as it was: quoting, ``$VAR`` and globs expand as
they did. What it does not understand makes it return None rather than guess: command substitution
(``$(…)``, backquotes), here-documents, unterminated quotes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

_OPERATORS = ("&&", "||", ";;", "|&", ";", "|", "&", "(", ")")
_BREAK = set(" \t\n;&|()<>")


@dataclass(frozen=True, slots=True)
class Token:
    """A word (``text`` is its value once quotes are removed), a control operator (``&&``, ``;``, a
    newline as ``;``), or a redirection (``text`` is its raw text, target included: ``2>&1``).
    ``start``/``end`` are its span in the command line."""

    kind: Literal["word", "op", "redirect"]
    text: str
    start: int
    end: int


def tokenize(line: str) -> list[Token] | None:
    """The tokens of ``line``, or None where it uses what this module does not handle."""
    tokens: list[Token] = []
    i = 0
    while i < len(line):
        char = line[i]
        if char in " \t" or line.startswith("\\\n", i):
            i += 2 if char == "\\" else 1
        elif char == "\n":
            tokens.append(Token("op", ";", i, i + 1))
            i += 1
        elif char == "#":
            end = line.find("\n", i)
            i = end if end >= 0 else len(line)
        elif _redirect_at(line, i):
            token = _redirect(line, i)
            if token is None:
                return None
            tokens.append(token)
            i = token.end
        elif any(line.startswith(op, i) for op in _OPERATORS):
            op = next(op for op in _OPERATORS if line.startswith(op, i))
            tokens.append(Token("op", op, i, i + len(op)))
            i += len(op)
        else:
            word = _word(line, i)
            if word is None:
                return None
            tokens.append(word)
            i = word.end
    return tokens


def _redirect_at(line: str, i: int) -> bool:
    j = i
    while j < len(line) and line[j].isdigit():
        j += 1
    return line.startswith(("&>", ">", "<"), j)


def _redirect(line: str, i: int) -> Token | None:
    """A redirection and its target (``2>&1``, ``> out.txt``); a here-document gives None."""
    j = i
    while line[j].isdigit():
        j += 1
    if line.startswith("<<", j):
        return None
    op = next(op for op in ("&>>", "&>", ">>", ">&", "<&", ">|", "<>", ">", "<") if line.startswith(op, j))
    j += len(op)
    while j < len(line) and line[j] in " \t":
        j += 1
    target = _word(line, j)
    if target is None or not target.text:
        return None
    return Token("redirect", line[i:target.end], i, target.end)


def _word(line: str, start: int) -> Token | None:
    """The word starting at ``start``: quotes removed from its value, escapes resolved."""
    value: list[str] = []
    i = start
    while i < len(line) and line[i] not in _BREAK:
        char = line[i]
        if char == "`" or line.startswith("$(", i):
            return None
        if char == "\\":
            if i + 1 < len(line) and line[i + 1] != "\n":
                value.append(line[i + 1])
            i += 2
        elif char == "'":
            end = line.find("'", i + 1)
            if end < 0:
                return None
            value.append(line[i + 1:end])
            i = end + 1
        elif char == '"':
            i = _double_quoted(line, i + 1, value)
            if i < 0:
                return None
        else:
            value.append(char)
            i += 1
    return Token("word", "".join(value), start, i)


def _double_quoted(line: str, i: int, value: list[str]) -> int:
    """Read a double-quoted string's body from ``i`` into ``value``; the index after its closing quote,
    or -1 (unterminated, or a substitution inside)."""
    while i < len(line):
        char = line[i]
        if char == '"':
            return i + 1
        if char == "`" or line.startswith("$(", i):
            return -1
        if char == "\\" and i + 1 < len(line) and line[i + 1] in '"\\$`':
            value.append(line[i + 1])
            i += 2
        else:
            value.append(char)
            i += 1
    return -1
