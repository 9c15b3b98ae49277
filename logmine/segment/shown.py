"""Files as the session's own reads showed them before anything changed them.

An author often starts a session from uncommitted work: the recorded commit lacks a file, or holds an
older version of it, and the task's first patch of that file fails on the commit (a dirty start). Yet
agents read a file before they edit it — ``cat F``, ``sed -n '1,200p' F`` then ``sed -n '200,400p'
F``, ``nl -ba F | sed -n '1,120p'`` — and the tool's output is in the log. When those reads cover the
whole file (the last one reached its end) and nothing between them may have changed it, they show the
file as it was at that point of the session. :class:`SessionReads` gathers a session's reads and says
what they show at any point; :func:`shown_for_task` gives a task the files as its session began,
before each of the earlier tasks' steps, and as the task began. The rebuild writes each file whose
text differs from the tree's (:mod:`logmine.workspace.shown`), and the task's own patches still decide
whether that start is the author's.

Read whole or not at all: an output the CLI cut (``[... omitted N of M lines ...]``, ``…N tokens
truncated…``) gives only the whole lines it kept, reads that disagree on a line give nothing, and a
file whose end no read reached is left out. Only commands known to read (``cat``, ``rg``, ``git
status``), test runs and checks leave every file as it was; an edit naming its files (``sed -i F``,
``cat > F``) may change those; any other command (a script, an interpreter, a package manager, a
formatter) may have changed any file.
"""

from __future__ import annotations

import bisect
import os
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field

from logmine.ingest.records import Event
from logmine.segment.commands import executed, packaged_classifier, unwrap
from logmine.segment.gitdiff import Diffed, parse_diff
from logmine.segment.listing import parse_listing
from logmine.segment.powershell import as_bash, looks_powershell, posix_file, writes
from logmine.segment.records import Listed, Listing, Shown, patch_applied
from logmine.segment.status import parse_status
from logmine.store import Store, fetch_dicts

__all__ = ["Read", "SessionReads", "SessionStep", "parse_read", "session_reads", "shown_for_task"]

# The CLI's marks of a cut output, and the header of an output it may have cut.
_CUT = re.compile(r"\n?\[\.\.\. omitted \d+ of (?P<total>\d+) lines \.\.\.\]\n?|…\d+ tokens truncated…")
_TOTAL = re.compile(r"^Total output lines: \d+\n\n")
# What a macOS login shell's profile says first in Codex's sandbox, before the command's own output
# (Homebrew's ``/opt/homebrew/Library/Homebrew/cmd/shellenv.sh: line 18: /bin/ps: Operation not permitted``).
_PROFILE_NOISE = re.compile(r"\A(?:/[^\n:]+: line \d+: [^\n:]+: Operation not permitted\n)+")
_NUMBERED = re.compile(r"^ *(\d+)\t(.*)$", re.S)
_RANGE = re.compile(r"^(\d+)(?:,(\d+|\$))?p$")
# An edit whose targets its words name (any other editing command may have touched any file).
_TARGETED = {"sed", "perl", "mv", "cp", "rm", "touch", "truncate", "install", "ln", "mkdir", "rmdir", "chmod",
             "tee", "cat", "echo", "printf", "patch"}
_FORMATTER = re.compile(r"(?:^|\s)(?:--write|--fix)\b|\b(?:fmt|black|prettier|gofmt|rustfmt|ruff format|biome format)\b")
# Commands that read files and write none a start holds (build and check tools write ignored output; `export`,
# `set` and a venv's `activate` change the shell's variables only).
_READ_ONLY = re.compile(
    r"(?:\S*/)?(?:cat|head|tail|sed|nl|wc|rg|grep|egrep|ls|find|fd|tree|stat|file|du|df|diff|cmp|sort|uniq|cut|tr|"
    r"awk|jq|yq|echo|printf|pwd|date|which|type|command|basename|dirname|realpath|readlink|env|printenv|uname|"
    r"whoami|id|sleep|true|false|test|\[|:|apply_patch|applypatch|gh|pg_isready|ps|pgrep|lsof|tsc|eslint|mypy|"
    r"pyright|ruff\s+check|cargo\s+(?:check|clippy|build|metadata|tree)|go\s+(?:vet|build|list)|"
    r"git\s+(?:status|diff|log|show|branch|rev-parse|ls-files|ls-tree|cat-file|grep|blame|remote|config|fetch|add|commit|push|tag|"
    r"describe|shortlog|worktree\s+list)|(?:npm|pnpm|yarn|bun)\s+(?:ls|list|view|info|outdated|why|config\s+get|"
    r"(?:run\s+)?(?:lint|type-?check|typecheck|check|build|tsc))|pip[0-9.]*\s+(?:list|show|freeze)|"
    r"(?:python[0-9.]*|node)\s+--version|export|unset|set|(?:source|\.)\s+\S*bin/activate(?:\.\w+)?)(?:\s|$)")


@dataclass(frozen=True, slots=True)
class Read:
    """What one reading command showed of one file: lines from ``first`` (1-based), and where the
    file ends when the read reached its end (``length``: its line count), else None."""

    path: str  # as the command named it, joined to the directory it ran in
    first: int
    lines: tuple[str, ...]
    length: int | None
    newline_at_end: bool = True


def _range(script: str) -> tuple[int, int | None] | None:
    """``'A,Bp'`` → (A, B); ``'A,$p'`` → (A, None); ``'Ap'`` → (A, A)."""
    m = _RANGE.match(script.strip())
    if not m:
        return None
    first = int(m.group(1))
    last = None if m.group(2) == "$" else int(m.group(2) or first)
    return (first, last) if first >= 1 and (last is None or last >= first) else None


def _sed_range(words: list[str]) -> tuple[tuple[int, int | None], str | None] | None:
    """``sed -n 'A,Bp' [FILE]`` → ((A, B), FILE or None)."""
    if len(words) not in (3, 4) or words[:2] != ["sed", "-n"]:
        return None
    span = _range(words[2])
    return (span, words[3] if len(words) == 4 else None) if span else None


def _source(words: list[str]) -> tuple[str, bool] | None:
    """``cat F`` → (F, False); ``cat -n F`` / ``nl -ba F`` → (F, True: numbered lines)."""
    if len(words) == 2 and words[0] == "cat":
        return words[1], False
    if len(words) == 3 and (words[:2] == ["cat", "-n"] or words[:2] == ["nl", "-ba"]):
        return words[2], True
    if len(words) == 4 and words[:3] == ["nl", "-b", "a"]:
        return words[3], True
    return None


def _head(words: list[str]) -> int | None:
    """``head -n N`` / ``head -N`` / ``head`` (no file) → N."""
    if words == ["head"]:
        return 10
    if len(words) == 3 and words[:2] == ["head", "-n"] and words[2].isdigit():
        return int(words[2])
    if len(words) == 2 and words[0] == "head" and re.fullmatch(r"-\d+", words[1]):
        return int(words[1][1:])
    return None


#: PowerShell's whole-file read (a Windows session): ``Get-Content [-Raw] [-Path] F``.
_GET_CONTENT = re.compile(r"(?:Get-Content|gc)(?:\s+-Raw)?(?:\s+-(?:Literal)?Path)?\s+(?P<f>'[^']+'|\"[^\"$`]+\"|[^\s'\"$`;|&<>]+)"
                          r"(?:\s+-Raw)?(?:\s+-Encoding\s+\S+)?", re.I)


def _shape(command: str) -> tuple[str, bool, int, int | None] | None:
    """(file, numbered, first line asked, last line asked or None for the end) of a reading command."""
    ps = _GET_CONTENT.fullmatch(command.strip())
    if ps:
        name = ps.group("f").strip("'\"")
        return posix_file(name), False, 1, None
    stages = [part.strip() for part in command.split("|")]
    if len(stages) > 2 or any(c in re.sub(r"'[^']*'", "''", command) for c in ";&><`$()*?~{}\n"):
        return None
    try:
        words = [shlex.split(stage) for stage in stages]
    except ValueError:
        return None
    if len(words) == 1:
        one = words[0]
        if (src := _source(one)) is not None:
            return src[0], src[1], 1, None
        if (sed := _sed_range(one)) is not None and sed[1]:
            return sed[1], False, sed[0][0], sed[0][1]
        if len(one) >= 2 and one[0] == "head" and (n := _head(one[:-1])) is not None:
            return one[-1], False, 1, n
        if len(one) == 4 and one[:2] == ["tail", "-n"] and one[2].startswith("+") and one[2][1:].isdigit():
            return one[3], False, max(int(one[2][1:]), 1), None
        return None
    src = _source(words[0])
    if src is None or not src[1]:
        return None
    if (sed := _sed_range(words[1])) is not None and sed[1] is None:
        return src[0], True, sed[0][0], sed[0][1]
    if (n := _head(words[1])) is not None:
        return src[0], True, 1, n
    return None


def _numbered(lines: list[str], first: int) -> list[tuple[int, str]] | None:
    """``nl -ba`` lines as (number, text), checked to run on from ``first`` without a gap."""
    out = []
    for i, line in enumerate(lines):
        m = _NUMBERED.match(line)
        if not m or int(m.group(1)) != first + i:
            return None
        out.append((int(m.group(1)), m.group(2)))
    return out


def parse_read(command: str, output: str, where: str) -> list[Read]:
    """What a reading command that exited 0 showed: one :class:`Read` per part of the output (two
    when the CLI cut its middle and the lines carry their numbers), or none when the command is no
    whole-file read of one file or the output does not fit it. ``where``: the directory it ran in."""
    unwrapped = unwrap(command)
    shape = _shape(unwrapped.command)
    if shape is None:
        return []
    name, numbered, first, last = shape
    if name.startswith("-"):
        return []
    path = os.path.normpath(os.path.join(where, unwrapped.cd or ".", name))
    body = _TOTAL.sub("", output, count=1)
    if looks_powershell(unwrapped.command):  # a Windows console's line ends; the replay writes LF
        body = body.replace("\r\n", "\n")
    noise = _PROFILE_NOISE.match(body)
    if noise:  # not the file's: the lines a cut mark counts include them
        body = body[noise.end():]
    cuts = list(_CUT.finditer(body))
    asked = None if last is None else last - first + 1
    if not cuts:
        newline = body.endswith("\n") or body == ""
        lines = body[:-1].split("\n") if body.endswith("\n") else (body.split("\n") if body else [])
        if numbered:
            pairs = _numbered(lines, first)
            if pairs is None:
                return []
            lines = [text for _, text in pairs]
        reached = asked is None or len(lines) < asked
        length = first + len(lines) - 1 if reached and (lines or first == 1) else None
        return [Read(path, first, tuple(lines), length, newline or numbered)]
    if len(cuts) > 1:
        return []
    return _cut_read(path, body, cuts[0], numbered, first, asked, noise.group(0).count("\n") if noise else 0)


def _cut_read(path: str, body: str, cut: re.Match, numbered: bool, first: int, asked: int | None,
              noise: int = 0) -> list[Read]:
    """The whole lines either side of the CLI's cut: numbered ones where they stand; plain ones after
    the cut where the mark says how many lines the output had (``… of M lines``, ``noise`` of them
    a login shell's before the file's), its last being the output's last. A line the cut went
    through is left out on both sides."""
    head = body[:cut.start()].split("\n")[:-1]
    tail = body[cut.end():].lstrip("\n").split("\n")[1:]
    tail = tail[:-1] if tail and tail[-1] == "" else tail
    total = int(cut.group("total")) - noise if cut.group("total") else None
    reads = []
    if numbered:
        pairs = _numbered(head, first)
        if pairs:
            reads.append(Read(path, first, tuple(t for _, t in pairs), None))
        m = _NUMBERED.match(tail[0]) if tail else None
        if m and (rest := _numbered(tail, int(m.group(1)))):
            end = rest[-1][0]
            reached = asked is None or end < first + asked - 1
            reads.append(Read(path, rest[0][0], tuple(t for _, t in rest), end if reached else None))
        return reads
    if head:
        reads.append(Read(path, first, tuple(head), None))
    if total is not None and tail and total >= len(tail) + len(head):
        reached = asked is None or total < asked
        reads.append(Read(path, first + total - len(tail), tuple(tail), first + total - 1 if reached else None))
    return reads


@dataclass
class _File:
    """What the reads so far showed of one file."""

    lines: dict[int, str] = field(default_factory=dict)
    length: int | None = None
    newline_at_end: bool = True
    seq: int = 0
    broken: bool = False  # two reads disagreed

    def add(self, read: Read, seq: int) -> None:
        for i, line in enumerate(read.lines, read.first):
            if self.lines.setdefault(i, line) != line:
                self.broken = True
        if read.length is not None:
            if self.length is not None and self.length != read.length:
                self.broken = True
            self.length = read.length
            self.newline_at_end = read.newline_at_end
        self.seq = max(self.seq, seq)

    def text(self) -> str | None:
        if self.broken or self.length is None or any(i not in self.lines for i in range(1, self.length + 1)):
            return None
        if self.length == 0:
            return ""
        text = "\n".join(self.lines[i] for i in range(1, self.length + 1))
        return text + "\n" if self.newline_at_end else text


def _listing(command: str, output: str, where: str, seq: int) -> Listing | None:
    """What an ``ls`` showed (:func:`logmine.segment.listing.parse_listing`), the CLI's header, a login
    shell's noise and its cut marks taken off."""
    if "ls" not in command:
        return None
    unwrapped = unwrap(command)
    body = _CUT.sub("\n", _PROFILE_NOISE.sub("", _TOTAL.sub("", output, count=1)))
    return parse_listing(unwrapped.command, body, os.path.join(where, unwrapped.cd or "."), seq)


# PowerShell that only reads: cmdlets of these verbs, keywords, expressions and assignments of them
_PS_READ = re.compile(r"^(?:(?:Get|Select|Test|Measure|Sort|Where|ForEach|Format|Resolve|Split|Join|ConvertFrom|"
                      r"ConvertTo|Group|Compare)-[A-Za-z]+|Write-(?:Output|Host|Verbose)|Out-(?:String|Host|Null))$", re.I)
_PS_KEYWORDS = frozenset({"if", "elseif", "else", "foreach", "for", "while", "return", "try", "catch", "finally"})
_PS_ASSIGN = re.compile(r"^\$[\w:]+\s*[+]?=\s*")
_PS_QUOTED = re.compile(r"@'.*?'@|@\".*?\"@|'(?:[^']|'')*'|\"(?:[^\"`]|`.)*\"", re.S)  # strings are data


def _powershell_reads(command: str) -> bool:
    """Does a PowerShell command that is not translated to bash only read (``if (Test-Path $p) {
    Get-Content -Raw $p }``, ``$c = git log --format=%H``, ``Get-ChildItem x | ForEach-Object {
    $_.Name }``)? No writing cmdlet, redirection or script, and each statement a reading cmdlet, a
    keyword, an expression, or a program known to read (:data:`_READ_ONLY`). Anything else — a word
    inside a string split off included — may change files."""
    if writes(command):
        return False
    for statement in re.split(r"[;|{}()\n]", _PS_QUOTED.sub("''", command)):
        text = _PS_ASSIGN.sub("", statement.strip())
        head = text.split(maxsplit=1)[0] if text else ""
        if not head or head[0] in "$'\"[@-+.,!=<>" or head.lower() in _PS_KEYWORDS or head.isdigit() \
                or _PS_READ.match(head) or head.lower() in ("rg", "git") and _READ_ONLY.match(text):
            continue
        return False
    return True


def changes_nothing(command: str) -> bool:
    """Does ``command`` only read or run tests (``sed -n``, ``rg``, ``git status``, ``pnpm test``),
    changing no file of the work tree? Anything not known to (a script, a build, an install) may."""
    return _edits(command) == (False, False) and "*** Begin Patch" not in command


def _edits(command: str) -> tuple[bool, bool]:
    """(may it change files, may it change any file), from each simple command it runs. One that only
    reads (:data:`_READ_ONLY`) or runs tests changes none; an edit whose targets its words name
    (``sed -i F``, ``mv A B``, ``cat > F``) may change those; any other — a project script, a
    generator, a package manager, a formatter, ``node -e`` — may have changed any file."""
    if "*** Begin Patch" in command:  # apply_patch through the shell: its patch events say what it changed
        return False, False
    bash = as_bash(command)  # a Windows session's PowerShell: judged as the bash it replays as
    if bash is None:
        return (False, False) if _powershell_reads(command) else (True, True)
    command = bash
    classifier = packaged_classifier()
    named = classifier.edits_files(command) and not classifier.is_test(command)
    for part in executed(command):
        if _FORMATTER.search(part):
            return True, True
        if _READ_ONLY.match(part) or classifier.is_test_run(part):
            continue
        words = part.split()
        if not words or os.path.basename(words[0]) not in _TARGETED or "*" in part:
            return True, True
        named = True
    return named, False


@dataclass(frozen=True, slots=True)
class SessionStep:
    """One step of a session, in order: what it showed of files, and which files it may have changed."""

    seq: int
    reads: tuple[Read, ...] = ()
    patched: tuple[str, ...] = ()  # the paths a patch wrote (absolute)
    named: str | None = None  # a command that may change the files its text names: that text
    every: bool = False  # a command that may have changed any file
    diffs: tuple[Diffed, ...] = ()  # what a ``git diff`` showed (paths relative to the repository's top)
    listed: tuple[Listed, ...] = ()  # the tracked files a ``git status`` showed changed
    listing: Listing | None = None  # the directory an ``ls`` showed
    only_reads: bool = True  # a command that only reads (a test run or a build may write tracked files)

    @classmethod
    def command(cls, seq: int, command: str, where: str, exit_code: int | None, output: str | None) -> SessionStep:
        shows = exit_code == 0 and output is not None
        reads = tuple(parse_read(command, output or "", where)) if shows else ()
        diffs = tuple(parse_diff(command, output or "")) if shows and not reads else ()
        listed = tuple(parse_status(command, output or "", where, seq)) if shows and not reads else ()
        listing = _listing(command, output or "", where, seq) if shows and not reads else None
        edits, every = _edits(command)
        bash = as_bash(command)
        only = all(_READ_ONLY.match(part) for part in executed(bash)) if bash is not None else _powershell_reads(command)
        return cls(seq, reads, named=command if edits and not every else None, every=every, diffs=diffs,
                   listed=listed, listing=listing, only_reads=only)

    def may_change(self, path: str) -> bool:
        base = os.path.basename(path)
        return self.every or any(p == path or os.path.basename(p) == base for p in self.patched) or \
            (self.named is not None and base in self.named)


class SessionReads:
    """Every read of a session's steps, by file, with the steps that may have changed each file: what
    the reads show of the files at any point of the session (:meth:`at`). Built once per session."""

    def __init__(self, steps: Iterable[SessionStep]):
        steps = tuple(steps)
        self.reads: dict[str, list[tuple[int, Read]]] = {}
        self.diffs: dict[str, list[tuple[int, Diffed]]] = {}
        for step in steps:
            for read in step.reads:
                self.reads.setdefault(read.path, []).append((step.seq, read))
            for diff in step.diffs:
                self.diffs.setdefault(diff.path, []).append((step.seq, diff))
        changers = [s for s in steps if s.every or s.patched or s.named]
        self.changes = {path: [s.seq for s in changers if s.may_change(path)] for path in {*self.reads, *self.diffs}}
        self.changers = changers
        self.statuses = [(s.seq, s.listed) for s in steps if s.listed]
        self.listings = [s.listing for s in steps if s.listing is not None]
        self.first_run = min((s.seq for s in steps if s.every or not s.only_reads), default=float("inf"))
        self._texts: dict[tuple[str, float, float], tuple[str | None, int]] = {}  # one text per window, shared

    def at(self, seq: int) -> tuple[Shown, ...]:
        """The files as they were when the step ``seq`` began, where reads show them whole: the reads
        made after the last step before ``seq`` that may have changed the file and before the first
        one from ``seq`` on (``-1``: as the session began), in the order their last read came."""
        shown = []
        for path, reads in self.reads.items():
            low, high = self._window(path, seq)
            if (path, low, high) not in self._texts:
                file = _File()
                for when, read in reads:
                    if low < when < high:
                        file.add(read, when)
                self._texts[path, low, high] = (file.text(), file.seq)
            text, last = self._texts[path, low, high]
            if text is not None:
                shown.append(Shown(path, text, last, seq))
        for path, diffs in self.diffs.items():  # the writer prefers a read of the same file
            window = self._window(path, seq)
            if seen := [(when, diff) for when, diff in diffs if window[0] < when < window[1]]:
                when, diff = seen[-1]
                shown.append(Shown(path, diff.hunks, when, seq, base=diff.base, after=diff.after))
        return tuple(sorted(shown, key=lambda s: (s.seq, s.path)))

    def listed_at_start(self) -> tuple[Listed, ...]:
        """The tracked files the session's ``git status`` calls showed changed before the session could
        have changed them (:mod:`logmine.segment.status`): calls before the first command that does
        more than read (a test run may write a tracked SQLite file or a snapshot), and never a file that
        a patch or an edit before the call may have changed."""
        found: dict[tuple[str, bool], Listed] = {}
        for seq, listed in self.statuses:
            if seq > self.first_run:
                break
            for item in listed:
                if not any(s.seq < seq and s.may_change(item.path) for s in self.changers):
                    found.setdefault((item.path, item.from_top), item)
        return tuple(found.values())

    def began_with(self) -> tuple[Listing, ...]:
        """The directories the session's ``ls`` calls listed before anything could have changed them
        (before the first edit and the first command that does more than read), the first of each."""
        first_change = min(self.first_run, min((s.seq for s in self.changers), default=float("inf")))
        found: dict[str, Listing] = {}
        for listing in self.listings:
            if listing.seq < first_change:
                found.setdefault(listing.path, listing)
        return tuple(found.values())

    def _window(self, path: str, seq: int) -> tuple[float, float]:
        """The steps that may have changed ``path`` last before ``seq`` (-1: none) and first from it on."""
        changes = self.changes[path]
        i = bisect.bisect_left(changes, seq)
        return changes[i - 1] if i else -1, changes[i] if i < len(changes) else float("inf")


# Outputs are read only for the commands that may be reads; patches come from their events.
_COMMANDS_SQL = r"""
SELECT seq, command, workdir, exit_code,
       CASE WHEN regexp_matches(command, '(^|[\s/])(cat|sed|nl|head|tail)\s|(^|[\s/;&])ls(\s|$)|\bgit\s.*\b(diff|status)\b|^(Get-Content|gc)\s')
            THEN output END
         AS output
FROM tool_calls WHERE source_path = ? AND command IS NOT NULL ORDER BY seq
"""
_PATCHES_SQL = "SELECT * FROM events WHERE source_path = ? AND kind = 'patch' ORDER BY seq"
_CALLS_SQL = ("SELECT call_id, exit_code, left(output, 64) AS output FROM tool_calls "
              "WHERE source_path = ? AND call_id IS NOT NULL")


def session_reads(store: Store, source_path: str, cwd: str | None) -> SessionReads:
    """The reads of one stored session (:class:`SessionReads`); ``cwd``: the session's (the paths are
    joined to it). Empty without an absolute cwd."""
    if not cwd or not cwd.startswith("/"):
        return SessionReads(())
    patched: dict[int, list[str]] = {}
    calls = {row["call_id"]: row for row in fetch_dicts(store.con.execute(_CALLS_SQL, [source_path]))}
    for row in fetch_dicts(store.con.execute(_PATCHES_SQL, [source_path])):
        if row["call_id"] in calls and not patch_applied(calls[row["call_id"]]):
            continue  # apply_patch refused it: the file is as it was
        op = Event.from_row(row).file_op
        where = os.path.join(cwd, posix_file(row.get("workdir") or "."))
        patched.setdefault(row["seq"], []).extend(os.path.normpath(os.path.join(where, posix_file(p)))
                                                  for p in (op.path, op.move_to) if p)
    steps = [SessionStep(seq, patched=tuple(paths)) for seq, paths in patched.items()]
    for row in fetch_dicts(store.con.execute(_COMMANDS_SQL, [source_path])):
        step = SessionStep.command(row["seq"], row["command"], os.path.join(cwd, posix_file(row["workdir"] or ".")),
                                   row["exit_code"], row["output"])
        if step.reads or step.diffs or step.listed or step.listing or step.named or step.every or not step.only_reads:
            steps.append(step)
    return SessionReads(sorted(steps, key=lambda s: s.seq))


def shown_for_task(session: SessionReads, first_seq: int, prior: Iterable[int] = ()) -> tuple[Shown, ...]:
    """What the session's reads show of a task's start and of the earlier work redone to make it:
    the files as the session began (``before`` -1), before each of the earlier tasks' steps (their
    seqs: ``prior``), and as the task began (``before`` its ``first_seq``), each where it was not
    known with the same text at the point before — read after the last step that may have changed
    the file (a patch, a script, ``npx expo install``) and before the next one."""
    out: list[Shown] = []
    before: dict[str, tuple[str, str]] = {}
    for point in (-1, *sorted(set(prior)), first_seq):
        now = {s.path: s for s in session.at(point)}
        out += [s for path, s in now.items() if before.get(path) != (s.text, s.after)]
        before = {path: (s.text, s.after) for path, s in now.items()}
    return tuple(out)
