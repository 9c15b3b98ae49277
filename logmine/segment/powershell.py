"""A Windows session, replayed on POSIX: its paths, and its PowerShell commands as bash.

Codex CLI on Windows records its cwd as ``D:\\repos\\proj`` and runs each command in PowerShell.
Its patches name files relative to that cwd, and most of what it runs besides is portable (``npm
test``, ``cd web; npm test``, ``git status``), but it writes files with PowerShell:

    @'
    export function add(a, b) { return a + b; }
    '@ | Set-Content -Path src/add.js

and makes, moves and removes them with ``New-Item``, ``Move-Item``, ``Remove-Item``. A task of such
a session is replayed with the cwd as Git Bash names it (``/d/repos/proj``) and each command
translated (:func:`to_bash`): a here-string written with ``Set-Content``/``Out-File``/``Add-Content``
becomes a quoted here-document, the file cmdlets their coreutils, ``$env:NAME = 'v'`` an
``export``, a Windows path a POSIX one, and a command that only reads (``Get-Content``,
``Get-ChildItem``, ``Select-String``) does nothing. A command with anything else PowerShell
(a variable, a script block, a ``.ps1`` script, ``ConvertFrom-Json``) is not guessed at: it
replays as a command that fails and says so, like any edit that does not replay.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from logmine.segment.records import Action, TaskInput

__all__ = ["NOT_TRANSLATED", "as_bash", "is_windows", "looks_powershell", "on_posix", "posix_file", "posix_path", "to_bash", "writes"]

_DRIVE = re.compile(r"^([A-Za-z]):[\\/]")
#: What a command that cannot be translated replays as (it fails, and says why).
NOT_TRANSLATED = "echo 'logmine: a PowerShell command not translated to bash' >&2; exit 127"

_HERE = re.compile(r"@(?P<q>['\"])\r?\n(?P<body>.*?)\r?\n(?P=q)@", re.S)
_WRITERS = {"set-content": ">", "sc": ">", "out-file": ">", "add-content": ">>", "ac": ">>"}
_READERS = {"get-content", "gc", "cat", "type", "get-childitem", "gci", "ls", "dir", "select-string", "sls",
            "test-path", "get-item", "gi", "get-date", "write-host", "write-output", "echo", "resolve-path",
            "get-location", "pwd", "measure-object", "select-object", "sort-object", "format-list", "format-table",
            "out-string", "out-host", "get-command", "where.exe", "get-filehash", "get-itemproperty"}
_CD = {"cd", "set-location", "sl", "chdir", "push-location", "pushd"}
_MAKE = {"new-item", "ni", "mkdir", "md"}
_MOVE = {"move-item", "mi", "move", "mv"}
_COPY = {"copy-item", "cpi", "copy", "cp"}
_REMOVE = {"remove-item", "ri", "rm", "del", "erase", "rmdir", "rd"}
_VERB_NOUN = re.compile(r"^[A-Za-z]+-[A-Za-z]+$")
_RELATIVE = re.compile(r"^[\w.@+-]+(?:\\[\w.@+*?-]*)+$")  # web\tests\*, .\scripts\x.js
_PLAIN = re.compile(r"^[\w./@+:,=*?-]+$")  # needs no quoting (a glob stays one)


_VERBS = ("Get|Set|New|Remove|Move|Copy|Add|Out|Select|Write|Test|ConvertTo|ConvertFrom|Invoke|Start|Stop|Clear|"
          "Rename|Expand|Compress|Import|Export|Measure|Sort|Where|ForEach|Format|Join|Split|Resolve|Push|Pop|Read")
_CMDLET = rf"(?:{_VERBS})-[A-Z][A-Za-z]+\b"
_POWERSHELL = re.compile(rf"(?m)^\s*(?:@['\"]\r?$|\$env:\w+\s*=|\$\w+\s*=|{_CMDLET})|[;|]\s*{_CMDLET}")
_WRITES = re.compile(r"\b(?:Set-Content|Add-Content|Clear-Content|Out-File|New-Item|Move-Item|Copy-Item|Remove-Item|"
                     r"Rename-Item|Expand-Archive)\b|\.ps1\b|(?<![\d&])>(?!\s*\$null)", re.I)


_BASH_HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1[^\n]*\n.*?^\2$", re.S | re.M)


def looks_powershell(command: str) -> bool:
    """Is ``command`` PowerShell (a cmdlet ``Verb-Noun``, a here-string, a variable assigned)? A bash
    here-document's body is not looked at."""
    return bool(_POWERSHELL.search(_BASH_HEREDOC.sub("", command)))


def as_bash(command: str) -> str | None:
    """``command`` as the bash it replays as: a PowerShell one translated (:func:`to_bash`), None when
    it is not translated; any other as it is. What the classifiers judge."""
    if not looks_powershell(command):
        return command
    bash = to_bash(command)
    return None if bash == NOT_TRANSLATED else bash


def writes(command: str) -> bool:
    """May a PowerShell command that is not translated change files (a writing cmdlet, a
    redirection, a script)? It is then an edit that does not replay."""
    return bool(_WRITES.search(command))


def is_windows(path: str | None) -> bool:
    """Is ``path`` a Windows one (``D:\\repos\\proj``, ``C:/x``, ``\\\\server\\share``)?"""
    if not path:
        return False
    return bool(_DRIVE.match(path)) or path.startswith("\\\\")


def posix_path(path: str) -> str:
    """``D:\\repos\\proj`` → ``/d/repos/proj`` (Git Bash's name for it); other paths with ``/``."""
    drive = _DRIVE.match(path)
    rest = path[drive.end():] if drive else path.lstrip("\\")
    head = f"/{drive.group(1).lower()}/" if drive else "/"
    return (head + rest.replace("\\", "/")).rstrip("/") or "/"


def posix_file(path: str) -> str:
    """A path a Windows session named (absolute, or relative with backslashes) as POSIX; a POSIX
    path as it is."""
    return posix_path(path) if is_windows(path) else path.replace("\\", "/")


def on_posix(item: TaskInput) -> TaskInput:
    """``item`` as replayed on POSIX when its session ran on Windows (else ``item``): the cwd, every
    workdir and patch path made POSIX (:func:`posix_path`), and, where its commands are PowerShell,
    each command translated (:func:`to_bash`)."""
    task = item.task
    cwd = task.start_state.repo.cwd
    if not is_windows(cwd):
        return item

    def where(path: str | None) -> str | None:
        return posix_path(path) if path and is_windows(path) else path

    # Codex runs PowerShell on Windows; Claude Code runs Git Bash there, whose commands stay as they are
    shell = [c for c in (*(a.command for a in (*item.actions, *item.prior)), *(c.command for c in item.candidates)) if c]
    powershell = any(looks_powershell(c) for c in shell)

    def command(text: str | None) -> str | None:
        return to_bash(text) if text is not None and powershell else text

    def file(path: str | None) -> str | None:  # a patch's path: absolute, or relative with backslashes
        return None if path is None else posix_file(path)

    def action(a: Action) -> Action:
        ops = tuple(replace(op, path=posix_file(op.path), move_to=file(op.move_to)) for op in a.ops)
        return replace(a, workdir=where(a.workdir), command=command(a.command), ops=ops)

    start = task.start_state
    task = replace(task, cwd=where(task.cwd),
                   start_state=replace(start, repo=replace(start.repo, cwd=where(cwd)),
                                       untracked=tuple(map(posix_file, start.untracked))))
    return replace(item, task=task, actions=tuple(map(action, item.actions)), prior=tuple(map(action, item.prior)),
                   candidates=tuple(replace(c, workdir=where(c.workdir), command=command(c.command))
                                    for c in item.candidates))


def to_bash(command: str) -> str:
    """A PowerShell command line as bash (:data:`NOT_TRANSLATED` where it holds what is not
    translated). Statements are split at ``;``, ``&&``, ``||`` and line ends outside quotes and
    here-strings, and each is translated alone."""
    try:
        parts = _statements(command)
        return "".join(_statement(text) + sep for text, sep in parts).strip() or ":"
    except _Untranslated:
        return NOT_TRANSLATED


class _Untranslated(Exception):
    """A statement this module does not translate."""


def _statements(command: str) -> list[tuple[str, str]]:
    """(statement, the separator after it) pairs, the separators as bash writes them."""
    out: list[tuple[str, str]] = []
    start = i = 0
    quote = None
    while i < len(command):
        c = command[i]
        if quote:
            if c == quote:
                quote = None
        elif c == "@" and command[i + 1:i + 2] in ("'", '"') and command[i + 2:i + 3] in ("\n", "\r"):
            found = _HERE.match(command, i)
            if not found:
                raise _Untranslated
            i = found.end()
            continue
        elif c in "'\"":
            quote = c
        elif c == "`":  # PowerShell's escape character
            i += 2
            continue
        elif c in ";\n" or command.startswith(("&&", "||"), i):
            sep = command[i:i + 2] if c in "&|" else "; " if c == ";" else "\n"
            out.append((command[start:i].strip(), f" {sep} " if c in "&|" else sep))
            i += 2 if c in "&|" else 1
            start = i
            continue
        i += 1
    if quote:
        raise _Untranslated
    out.append((command[start:].strip(), ""))
    return [(text, sep) for text, sep in out if text]


def _statement(text: str) -> str:
    here = _HERE.match(text)
    if here:
        return _write(here, text[here.end():])
    env = re.fullmatch(r"\$env:(\w+)\s*=\s*(.+)", text)
    if env:
        return f"export {env.group(1)}={shlex.quote(_literal(env.group(2).strip()))}"
    text = re.sub(r"(\d?>)\s*\$null\b", r"\1/dev/null", text)  # 2>$null
    text = re.sub(r"\|\s*Out-Null\s*$", ">/dev/null", text, flags=re.I)
    if "`" in text or text[0] in "$@&.({[":
        raise _Untranslated
    piped = _pipeline(text)
    if ">" not in text and all(p.split()[0].lower() in _READERS for p in piped if p.split()):
        return ":"  # it only reads
    if len(piped) > 1 or _expands(text):
        raise _Untranslated
    words = [_literal(w) for w in _split(text)]
    name = words[0].lower()
    if name in _CD:
        return "cd " + _path(words[1]) if len(words) > 1 else ":"
    if name in _MAKE:
        return _make(words)
    if name in _MOVE or name in _COPY:
        flags, args = _args(words[1:], ("path", "literalpath", "destination"))
        if len(args) != 2:
            raise _Untranslated
        what = "mv -f" if name in _MOVE else "cp -rf" if "recurse" in flags else "cp -f"
        return f"{what} {_path(args[0])} {_path(args[1])}"
    if name in _REMOVE:
        flags, args = _args(words[1:], ("path", "literalpath"))
        if not args:
            raise _Untranslated
        return ("rm -rf " if "recurse" in flags or name in ("rmdir", "rd") else "rm -f ") + " ".join(map(_path, args))
    if _VERB_NOUN.match(name) or name.endswith(".ps1") or name in _READERS:
        raise _Untranslated
    # a program run by name (npm, git, python): as written, its path arguments made POSIX
    return " ".join(_word(w) for w in _split(text))


def _word(word: str) -> str:
    """One argument of a program run by name as bash takes it: a path made POSIX, a quoted word
    quoted for bash (PowerShell's ``'it''s'`` is one word), a bare word as written."""
    plain = _literal(word)
    if _is_path(plain):
        return _path(plain)
    return shlex.quote(plain) if plain != word else word


def _expands(text: str) -> bool:
    """Does ``text`` hold what PowerShell would expand or evaluate (a variable, a subexpression, a
    script block, a splat), outside single quotes and, for ``$`` and the backtick, in double quotes?"""
    bare = re.sub(r"'[^']*'", "", text)
    quoted = re.findall(r'"[^"]*"', bare)
    return any(re.search(r"[$`]", q) for q in quoted) or bool(re.search(r"[$@{}()]", re.sub(r'"[^"]*"', "", bare)))


def _pipeline(text: str) -> list[str]:
    """``text`` split at ``|`` outside quotes (``||`` is a separator, split before)."""
    return [part.strip() for part in re.findall(r"(?:'[^']*'|\"[^\"]*\"|[^|'\"])+", text)]


def _write(here: re.Match, rest: str) -> str:
    """``@'…'@ | Set-Content PATH`` (or ``Out-File``, ``Add-Content``): a quoted here-document."""
    body = here.group("body")
    if here.group("q") == '"' and re.search(r"[$`]", body):  # an expanding here-string with something to expand
        raise _Untranslated
    pipe = re.fullmatch(r"\s*\|\s*(.+)", rest, re.S)
    if not pipe:
        raise _Untranslated
    words = [_literal(w) for w in _split(pipe.group(1))]
    redirect = _WRITERS.get(words[0].lower())
    if redirect is None:
        raise _Untranslated
    flags, args = _args(words[1:], ("path", "filepath", "literalpath"), takes=("encoding", "value", "width"))
    if len(args) != 1:
        raise _Untranslated
    if "append" in flags:
        redirect = ">>"
    target, mark = _path(args[0]), "LOGMINE_PS"
    while mark in body:
        mark += "_"
    line = f"cat {redirect} {target} <<'{mark}'\n{body.replace(chr(13), '')}\n{mark}"
    return line + (f"\ntruncate -s -1 {target}" if "nonewline" in flags else "")


def _make(words: list[str]) -> str:
    flags, args = _args(words[1:], ("path", "name"), takes=("itemtype", "type", "value"))
    if not args:
        raise _Untranslated
    kind = flags.get("itemtype", flags.get("type", "directory" if words[0].lower() in ("mkdir", "md") else "file"))
    paths = [_path(p) for p in args]  # _args split them at commas
    if kind.lower() in ("directory", "dir"):
        return "mkdir -p " + " ".join(paths)
    if kind.lower() == "file" and "value" not in flags:
        return "; ".join(f"mkdir -p \"$(dirname {p})\" && : > {p}" for p in paths)
    raise _Untranslated


def _args(words: list[str], named: tuple[str, ...], takes: tuple[str, ...] = ()) -> tuple[dict[str, str], list[str]]:
    """(flags, the path arguments) of a cmdlet's ``words``: ``-Path X`` and positional ones; the
    switches and ``takes`` (flags with a value) by lower-case name."""
    flags: dict[str, str] = {}
    args: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word.startswith("-") and len(word) > 1 and not word[1].isdigit():
            name = word[1:].rstrip(":").lower()
            if name in named and i + 1 < len(words):
                args += [w for w in words[i + 1].split(",") if w]
                i += 2
                continue
            if name in takes and i + 1 < len(words):
                flags[name] = words[i + 1]
                i += 2
                continue
            flags[name] = ""
        else:
            args += [w for w in word.split(",") if w]
        i += 1
    return flags, args


def _split(text: str) -> list[str]:
    """Words as PowerShell quotes them: ``'…'`` literal (``''`` a quote), ``"…"`` kept whole."""
    return re.findall(r"'(?:[^']|'')*'|\"(?:[^\"`]|`.)*\"|\S+", text)


def _literal(word: str) -> str:
    if len(word) >= 2 and word[0] == word[-1] == "'":
        return word[1:-1].replace("''", "'")
    if len(word) >= 2 and word[0] == word[-1] == '"':
        if re.search(r"[$`]", word[1:-1]):
            raise _Untranslated
        return word[1:-1]
    return word


def _is_path(word: str) -> bool:
    return is_windows(word) or bool(_RELATIVE.match(word))


def _path(word: str) -> str:
    """A path argument as bash takes it: Windows paths made POSIX; a glob left to bash."""
    path = posix_file(word)
    return path if _PLAIN.match(path) else shlex.quote(path)
