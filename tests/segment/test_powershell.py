"""A Windows session's PowerShell commands, translated to bash and run by bash: what they write is
what PowerShell would have written; what is not translated fails and says so, never half-runs."""

from __future__ import annotations

import subprocess

import pytest

from logmine.segment.commands import packaged_classifier
from logmine.segment.powershell import NOT_TRANSLATED, is_windows, looks_powershell, posix_path, to_bash

MODULE = "export function add(a, b) {\n  return a + b; // 'sum' and \"total\" and $notAVariable\n}"


def _run(command: str, tmp_path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", to_bash(command)], cwd=tmp_path, capture_output=True, text=True)


@pytest.mark.parametrize("writer", ["Set-Content -Path web\\src\\add.js -Encoding utf8", "Set-Content web/src/add.js",
                                    "Out-File -FilePath web\\src\\add.js", "Set-Content -Path 'web\\src\\add.js'"])
def test_a_here_string_piped_to_a_writer_is_the_file(tmp_path, writer):
    (tmp_path / "web" / "src").mkdir(parents=True)
    done = _run(f"@'\n{MODULE}\n'@ | {writer}", tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "web" / "src" / "add.js").read_text() == MODULE + "\n"


def test_add_content_appends_and_no_newline_leaves_it_out(tmp_path):
    (tmp_path / "notes.txt").write_text("one\n")
    assert _run("@'\ntwo\n'@ | Add-Content notes.txt", tmp_path).returncode == 0
    assert _run("@'\nbare\n'@ | Set-Content -NoNewline bare.txt", tmp_path).returncode == 0
    assert (tmp_path / "notes.txt").read_text() == "one\ntwo\n" and (tmp_path / "bare.txt").read_text() == "bare"


def test_file_cmdlets_become_coreutils(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "a.test.js").write_text("a\n")
    (tmp_path / "old").mkdir()
    command = ("New-Item -ItemType Directory -Force -Path web/tests,web/public; Move-Item tests\\* web/tests; "
               "Remove-Item -Recurse -Force tests, old; Copy-Item web\\tests\\a.test.js web\\public\\b.js; "
               "New-Item -ItemType File -Force -Path web/.keep")
    done = _run(command, tmp_path)
    assert done.returncode == 0, (to_bash(command), done.stderr)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()) == \
        ["web/.keep", "web/public/b.js", "web/tests/a.test.js"]


@pytest.mark.parametrize(("command", "bash"), [
    ("cd web; npm test", "cd web; npm test"),
    ("cd web && npm test -- --run", "cd web && npm test -- --run"),
    ("$env:CI='1'; npm test", "export CI=1; npm test"),
    ("git rev-parse --git-dir 2>$null", "git rev-parse --git-dir 2>/dev/null"),
    ("python -m pytest tests\\unit -q", "python -m pytest tests/unit -q"),
    # a quoted argument is one word, PowerShell's doubled quote a quote; a quoted path is made POSIX
    ("npx vitest run -t 'it''s saved'", "npx vitest run -t 'it'\"'\"'s saved'"),
    ("git commit -m \"first draft\"", "git commit -m 'first draft'"),
    ("npx vitest run 'src\\a.test.ts'", "npx vitest run src/a.test.ts"),
    ("Get-Content D:\\repos\\app\\README.md | Select-String 'Install'", ":"),
    ("Get-ChildItem -Recurse .specify", ":"),
])
def test_commands_as_bash(command, bash):
    assert to_bash(command) == bash


@pytest.mark.parametrize("command", [
    "$pkg = Get-Content web/package.json -Raw | ConvertFrom-Json; $pkg | ConvertTo-Json | Set-Content web/package.json",
    ".specify/scripts/powershell/setup-plan.ps1 -Json",
    "if (Test-Path specs) { Get-ChildItem specs }",
    "@\"\nconst v = '$version';\n\"@ | Set-Content v.js",  # an expanding here-string: PowerShell fills $version in
    "Get-Content a.txt > b.txt",
    "Invoke-WebRequest https://example.com -OutFile x",
])
def test_what_is_not_translated_fails_and_says_so(command, tmp_path):
    assert to_bash(command) == NOT_TRANSLATED
    done = _run(command, tmp_path)
    assert done.returncode == 127 and "not translated" in done.stderr and not list(tmp_path.iterdir())


def test_a_windows_commands_edits_are_known():
    classifier = packaged_classifier()
    assert classifier.edits_files("@'\nx = 1\n'@ | Set-Content -Path app.py")
    assert classifier.edits_files("New-Item -ItemType Directory -Force -Path web/src")
    assert classifier.edits_files("$p = Get-Content a.json | ConvertFrom-Json; $p | ConvertTo-Json | Set-Content a.json")
    assert not classifier.edits_files("Get-Content app.py | Select-String import")
    assert classifier.edits_files("cat > h.txt <<EOF\nContent-Type: json\nEOF")  # bash, a header line in its body
    assert not looks_powershell("cat > h.txt <<EOF\nContent-Type: json\nEOF")


def test_windows_paths():
    assert is_windows("D:\\repos\\JulesJenga") and is_windows("C:/Users/b") and not is_windows("/home/u/proj")
    assert posix_path("D:\\repos\\JulesJenga") == "/d/repos/JulesJenga" and posix_path("C:\\") == "/c"


def test_get_content_is_a_whole_file_read():
    """``Get-Content F`` shows the file, its lines ended as a Windows console ends them: the read
    is the file with LF ends, its path made POSIX under the cwd as replayed."""
    from logmine.segment.shown import parse_read

    where = "/d/repos/app"
    shown = parse_read("Get-Content web\\package.json", '{\r\n  "test": "vitest run"\r\n}\r\n', where)
    assert [(r.path, r.lines, r.length) for r in shown] == [(f"{where}/web/package.json", ("{", '  "test": "vitest run"', "}"), 3)]
    raw = parse_read("Get-Content -Raw D:\\repos\\app\\AGENTS.md", "# Guide\r\n", where)
    assert [(r.path, r.lines) for r in raw] == [(f"{where}/AGENTS.md", ("# Guide",))]
    assert parse_read("Get-Content web/package.json | Select-String test", "x\r\n", where) == []


def _item(cwd: str, *commands: str):
    from logmine.segment.records import Action, Repo, StartState, Task, TaskInput

    task = Task("t1", "s1", "x.jsonl", 0, "fix it", 0, 9, StartState(Repo(cwd=cwd)), True, cwd=cwd)
    return TaskInput(task, (), tuple(Action(i, "command", f"c{i}", command=c) for i, c in enumerate(commands)), ())


def test_a_codex_windows_task_is_translated_and_a_git_bash_one_kept():
    """Codex runs PowerShell on Windows, Claude Code runs Git Bash: the same cwd, ``W:\\\\code\\\\app``,
    becomes ``/w/code/app`` for both, and only PowerShell commands are translated."""
    from logmine.segment.powershell import on_posix

    codex = on_posix(_item("W:\\code\\app", "New-Item -ItemType Directory -Force -Path web", "cd web; npm test"))
    assert codex.task.start_state.repo.cwd == codex.task.cwd == "/w/code/app"
    assert [a.command for a in codex.actions] == ["mkdir -p web", "cd web; npm test"]
    heredoc = "cat > notes.txt <<'EOF'\nNew-Item is PowerShell's\nEOF"
    bash = on_posix(_item("W:\\code\\app", "cd /w/code/app && npm test", heredoc))
    assert [a.command for a in bash.actions] == ["cd /w/code/app && npm test", heredoc]
    linux = _item("/home/u/app", "New-Item x")
    assert on_posix(linux) is linux
