"""What a session's reads show of its files: whole reads, chunked reads, cut outputs, and the steps
that make a read stale."""

from __future__ import annotations

from logmine.segment.shown import SessionReads, SessionStep, parse_read, shown_for_task

CWD = "/home/u/proj"
TEXT = "".join(f"line {i}\n" for i in range(1, 301))


def _lines(first: int, last: int, numbered: bool = False) -> str:
    return "".join(f"{i:6d}\tline {i}\n" if numbered else f"line {i}\n" for i in range(first, last + 1))


def _read(seq: int, command: str, output: str, exit_code: int = 0) -> SessionStep:
    return SessionStep.command(seq, command, CWD, exit_code, output)


def _text(steps: list[SessionStep]) -> dict[str, str]:
    return {s.path: s.text for s in SessionReads(steps).at(-1)}  # as the session began


def test_cat_shows_the_whole_file_relative_to_where_it_ran():
    [read] = parse_read("cat src/app.py", "a = 1\nb = 2\n", CWD)
    assert (read.path, read.first, read.lines, read.length) == (f"{CWD}/src/app.py", 1, ("a = 1", "b = 2"), 2)
    [read] = parse_read("bash -lc 'cd src && cat app.py'", "a\n", CWD)
    assert read.path == f"{CWD}/src/app.py"


def test_sed_chunks_join_into_the_whole_file_once_one_reaches_its_end():
    first = _read(1, "sed -n '1,200p' f.txt", _lines(1, 200))
    assert _text([first]) == {}  # 200 lines asked, 200 shown: the end is not known
    rest = _read(2, "sed -n '200,400p' f.txt", _lines(200, 300))
    assert _text([first, rest]) == {f"{CWD}/f.txt": TEXT}


def test_numbered_reads_give_their_lines_on_both_sides_of_a_cut():
    cut = _lines(1, 120, True) + "   121\tline" + "\n[... omitted 0 of 200 lines ...]\n\n" + "ne 150\n" + _lines(151, 300, True)
    reads = parse_read("nl -ba f.txt | sed -n '1,400p'", cut, CWD)
    assert [(r.first, len(r.lines), r.length) for r in reads] == [(1, 120, None), (151, 150, 300)]
    middle = _read(2, "nl -ba f.txt | sed -n '100,160p'", _lines(100, 160, True))
    assert _text([SessionStep(1, tuple(reads)), middle]) == {f"{CWD}/f.txt": TEXT}


def test_a_cut_plain_output_never_makes_a_whole_file():
    cut = "Total output lines: 300\n\n" + _lines(1, 128) + "[... omitted 44 of 300 lines ...]\n\n" + _lines(173, 300)
    assert _text([_read(1, "cat f.txt", cut)]) == {}
    assert _text([_read(1, "cat f.txt", _lines(1, 10) + "…1200 tokens truncated…" + _lines(250, 300))]) == {}


def test_plain_lines_after_a_cut_stand_where_the_mark_says_the_output_ended():
    cut = _lines(1, 128) + "[... omitted 44 of 300 lines ...]\n\n" + _lines(173, 300)
    middle = _read(2, "sed -n '120,180p' f.txt", _lines(120, 180))
    assert _text([_read(1, "cat f.txt", cut), middle]) == {f"{CWD}/f.txt": TEXT}


NOISE = "/opt/homebrew/Library/Homebrew/cmd/shellenv.sh: line 18: /bin/ps: Operation not permitted\n"


def test_what_a_macos_login_shell_says_first_is_not_the_files():
    """Codex on macOS runs commands in a login shell whose profile (Homebrew's ``shellenv``) cannot run
    ``/bin/ps`` in the sandbox: its complaint comes first in every output, never part of a file."""
    [read] = parse_read("cat package.json", NOISE + '{"name": "app"}\n', CWD)
    assert (read.lines, read.length) == (('{"name": "app"}',), 1)
    chunk = _read(1, "sed -n '1,200p' f.txt", NOISE + _lines(1, 200))
    rest = _read(2, "sed -n '200,400p' f.txt", NOISE + _lines(200, 300))
    assert _text([chunk, rest]) == {f"{CWD}/f.txt": TEXT}
    cut = NOISE + _lines(1, 128) + "[... omitted 44 of 301 lines ...]\n\n" + _lines(173, 300)  # the mark counts it
    middle = _read(2, "sed -n '120,180p' f.txt", NOISE + _lines(120, 180))
    assert _text([_read(1, "cat f.txt", cut), middle]) == {f"{CWD}/f.txt": TEXT}
    [read] = parse_read("cat notes.txt", "/etc/motd: line 1 is what this file says\n", CWD)
    assert read.lines == ("/etc/motd: line 1 is what this file says",)  # a file's own first line stays


def test_reads_that_are_not_one_whole_file_read_give_nothing():
    for command in ("cat a.txt b.txt", "grep -n x f.txt", "sed -n '1,20p' f.txt && cat g.txt", "cat f.txt > g.txt",
                    "cat $HOME/f.txt", "sed -i 's/a/b/' f.txt", "cat *.txt", "head -c 100 f.txt"):
        assert parse_read(command, "a\n", CWD) == [], command
    assert _text([_read(1, "cat missing.txt", "cat: missing.txt: No such file or directory\n", exit_code=1)]) == {}


def test_a_file_without_a_newline_at_its_end_and_an_empty_file():
    assert _text([_read(1, "cat f.txt", "a\nb")]) == {f"{CWD}/f.txt": "a\nb"}
    assert _text([_read(1, "cat e.txt", "")]) == {f"{CWD}/e.txt": ""}


def test_reads_that_disagree_give_nothing():
    assert _text([_read(1, "cat f.txt", "a\n"), _read(2, "cat f.txt", "b\n")]) == {}


def test_a_patch_or_a_command_that_may_change_a_file_ends_what_later_reads_show_of_it():
    patched = SessionStep(2, patched=(f"{CWD}/f.txt",))
    assert _text([patched, _read(3, "cat f.txt", "new\n")]) == {}
    assert _text([_read(1, "cat f.txt", "old\n"), patched, _read(3, "cat f.txt", "new\n")]) == {f"{CWD}/f.txt": "old\n"}
    sed = _read(2, "sed -i 's/a/b/' f.txt", "")
    assert _text([sed, _read(3, "cat f.txt", "b\n"), _read(4, "cat g.txt", "g\n")]) == {f"{CWD}/g.txt": "g\n"}
    script = _read(2, "./scripts/generate.sh", "")
    assert _text([script, _read(3, "cat g.txt", "g\n")]) == {}
    formatter = _read(2, "npx prettier --write src", "")
    assert _text([formatter, _read(3, "cat g.txt", "g\n")]) == {}
    tests = _read(2, "pytest -q", "1 passed\n")
    assert _text([tests, _read(3, "cat g.txt", "g\n")]) == {f"{CWD}/g.txt": "g\n"}


def test_a_task_gets_the_session_start_and_what_its_own_reads_show_after_earlier_scripts():
    steps = [_read(1, "cat a.txt", "a0\n"), _read(2, "./setup.sh", ""), _read(10, "cat b.txt", "b1\n")]
    shown = shown_for_task(SessionReads(steps), first_seq=5)
    assert [(s.path.rsplit("/", 1)[1], s.text, s.before) for s in shown] == [("a.txt", "a0\n", -1),
                                                                             ("b.txt", "b1\n", 5)]
    assert [s.before for s in shown_for_task(SessionReads(steps), first_seq=1)] == [-1]  # the script ran in the task


def test_a_read_after_an_earlier_tasks_script_shows_a_later_tasks_start_unless_changed_since():
    steps = [_read(1, "npx expo install expo-camera", ""), _read(2, "cat package.json", "{}\n"),
             _read(3, "cat app.json", "{}\n"), SessionStep(4, patched=(f"{CWD}/app.json",))]
    shown = shown_for_task(SessionReads(steps), first_seq=10)
    assert [(s.path.rsplit("/", 1)[1], s.before) for s in shown] == [("package.json", 10)]
    # before an earlier task's step after the read (a patch of another file at 6), and not again at the task
    shown = shown_for_task(SessionReads([*steps, SessionStep(6, patched=(f"{CWD}/b.txt",))]), 10, prior=[6])
    assert [(s.path.rsplit("/", 1)[1], s.before) for s in shown] == [("package.json", 6)]


def test_a_read_after_an_earlier_patch_shows_the_task_start_when_nothing_changed_the_file_since():
    patched = SessionStep(2, patched=(f"{CWD}/f.txt",))
    after = [patched, _read(3, "cat f.txt", "patched\n")]
    assert [(s.text, s.before) for s in shown_for_task(SessionReads(after), first_seq=10)] == [("patched\n", 10)]
    again = [*after, SessionStep(5, patched=(f"{CWD}/f.txt",))]
    assert shown_for_task(SessionReads(again), first_seq=10) == ()


def test_only_reads_tests_and_checks_leave_every_file_as_it_was():
    for command in ("git status --short", "rg -n foo src", "ls -la && cat README.md", "npm run type-check",
                    "cargo clippy", "git add -A && git commit -m wip", "pytest -q",
                    "source .venv/bin/activate && export PYTHONPATH=src && pytest -q", "set -e; unset CI; . venv/bin/activate"):
        assert _text([_read(1, command, ""), _read(2, "cat g.txt", "g\n")]) == {f"{CWD}/g.txt": "g\n"}, command
    for command in ("node scripts/gen.js", "npm run db:migrate", "python -c 'open(\"g.txt\", \"w\")'", "make gen",
                    "curl -o g.txt https://example.com", "source scripts/env.sh && ls"):
        assert _text([_read(1, command, ""), _read(2, "cat g.txt", "g\n")]) == {}, command


def test_each_command_of_a_line_counts_and_a_patch_body_is_no_command():
    for command in ("mkdir -p out && ./gen.sh", "echo x > a.txt && node build.js", "cp a b; npx expo install x",
                    "ls && npm run lint -- --fix"):
        assert _text([_read(1, command, ""), _read(2, "cat g.txt", "g\n")]) == {}, command
    named = _read(1, "mkdir -p out && mv old.txt out/new.txt", "")
    assert _text([named, _read(2, "cat g.txt", "g\n")]) == {f"{CWD}/g.txt": "g\n"}
    assert SessionReads([_read(0, "cat old.txt", "o\n"), named]).at(5) == ()  # the file it names may have changed
    patch = "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: a.txt\n@@\n-x\n+black --fix && npm ci\n*** End Patch\nEOF"
    assert _text([_read(1, patch, ""), _read(2, "cat g.txt", "g\n")]) == {f"{CWD}/g.txt": "g\n"}


def test_powershell_that_only_reads_leaves_every_file_as_it_was():
    """A Windows session's PowerShell that is not translated to bash is judged statement by statement:
    reading cmdlets, keywords, expressions and reading programs change nothing; a writing cmdlet, an
    install or a script may change anything."""
    for command in ("$p = 'a/b.md'; if (Test-Path $p) { Write-Output 'EXISTS'; Get-Content -Raw $p } else { 'NO' }",
                    "Get-ChildItem 'src' -File | ForEach-Object { $_.Name }",
                    "rg -n \"auth|oauth (x)\" apps | Select-Object -First 20",
                    "$c = git log --format=%H -- a.ts; foreach ($h in $c) { $t = git show \"$h`:a.ts\" 2>$null }"):
        assert _text([_read(1, command, ""), _read(2, "cat g.txt", "g\n")]) == {f"{CWD}/g.txt": "g\n"}, command
    for command in ("npm install; Get-ChildItem", "Get-ChildItem | Remove-Item", "node gen.js | Select-Object -First 3",
                    "$x = 1; Set-Content -Path g.txt -Value $x", "git checkout main; Get-ChildItem x | Out-String"):
        assert _text([_read(1, command, ""), _read(2, "cat g.txt", "g\n")]) == {}, command
