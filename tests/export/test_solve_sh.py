"""``solution/solve.sh`` replays a task's actions as written: every command in its own subshell, then
the patch's file writes, and nothing a command holds (a ``#`` comment, an unbalanced quote the session
saw fail) swallows what follows it. Each script is run by bash on a copy of the start tree."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from logmine.export.bundle import solve_sh, syntax_error, write_seeds
from logmine.patch import parse_patch
from logmine.redact import Redactor
from logmine.segment.records import Action

ROOT = "/home/user/proj"
FIX = "*** Begin Patch\n*** Update File: calc.py\n@@\n def add(a, b):\n-    return a - b\n+    return a + b\n*** End Patch\n"
COMMANDS = [
    # a Django key with `&#`: bash reads the rest of the line as a comment (once ate the subshell's `)`)
    "echo 'SECRET_KEY = 'ab$c&#de(fg)h'' >> notes.txt",
    "echo done # a trailing comment )",
    "echo 'unbalanced",  # the session saw it fail; as replayed it fails alone
    "cat > hello.txt <<'EOF'\nhello\nEOF",
]


@pytest.mark.parametrize("command", COMMANDS)
def test_the_patch_after_a_command_is_applied(tmp_path, command):
    start = tmp_path / "start"
    start.mkdir()
    (start / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    actions = (Action(0, "command", "c1", command=command, workdir=ROOT),
               Action(1, "patch", "c2", ops=tuple(parse_patch(FIX)), workdir=ROOT))
    scratch = tmp_path / "scratch"
    subprocess.run(["cp", "-r", str(start), str(scratch)], check=True)
    script = tmp_path / "solve.sh"
    script.write_text(solve_sh(actions, scratch, ROOT, ROOT))
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0, script.read_text()
    subprocess.run(["bash", str(script)], env={"WORKSPACE": str(start), "PATH": "/usr/bin:/bin"},
                   capture_output=True, cwd=tmp_path)
    assert (start / "calc.py").read_text() == "def add(a, b):\n    return a + b\n", script.read_text()


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")
def test_a_patch_of_a_file_a_project_script_made_is_written_from_a_replay(tmp_path):
    """spec-kit's ``create-new-feature.sh`` copies a template, then the agent edits the copy: applied
    alone the patch finds no file; replayed after the script it does, and the grader's end state
    (the scratch tree) is the replay's."""
    start = tmp_path / "start"
    (start / "scripts").mkdir(parents=True)
    (start / "templates").mkdir()
    (start / "templates" / "spec.md").write_text("# Spec\n\nTODO\n")
    (start / "scripts" / "new.sh").write_text("mkdir -p specs/001 && cp templates/spec.md specs/001/spec.md\n"
                                              "echo draft > specs/001/notes.md\n")
    edit = ("*** Begin Patch\n*** Update File: specs/001/spec.md\n@@\n # Spec\n \n-TODO\n+Lotto tickets.\n"
            "*** Delete File: specs/001/notes.md\n*** End Patch\n")
    (start / "scripts" / "new.sh").chmod(0o755)  # run as `./scripts/new.sh`: the seeds keep its mode
    actions = (Action(0, "command", "c1", command="./scripts/new.sh", workdir=ROOT),
               Action(1, "patch", "c2", ops=tuple(parse_patch(edit)), workdir=ROOT))
    seeds = tmp_path / "seeds"
    write_seeds(start, seeds, Redactor())
    scratch = tmp_path / "scratch"
    shutil.copytree(seeds, scratch)
    script = tmp_path / "solve.sh"
    script.write_text(solve_sh(actions, scratch, ROOT, ROOT))
    assert "did not apply" not in script.read_text(), script.read_text()
    assert (scratch / "specs" / "001" / "spec.md").read_text() == "# Spec\n\nLotto tickets.\n"
    assert not (scratch / "specs" / "001" / "notes.md").exists() and (scratch / "templates" / "spec.md").exists()
    subprocess.run(["bash", str(script)], env={"WORKSPACE": str(seeds), "PATH": "/usr/bin:/bin"},
                   capture_output=True, cwd=tmp_path, check=True)
    assert (seeds / "specs" / "001" / "spec.md").read_text() == "# Spec\n\nLotto tickets.\n"
    assert not (seeds / "specs" / "001" / "notes.md").exists()


def test_a_solution_that_writes_a_large_file_is_checked_whole(tmp_path):
    """A real task's solve.sh wrote a 300 KB file: longer than one argument may be, its syntax check
    made the export fail (``Argument list too long: 'bash'``) instead of checking it."""
    big = "".join(f"+line {i} of a generated fixture\n" for i in range(12_000))
    patch = f"*** Begin Patch\n*** Add File: data/big.txt\n{big}*** End Patch\n"
    actions = (Action(0, "patch", "c1", ops=tuple(parse_patch(patch)), workdir=ROOT),)
    script = solve_sh(actions, tmp_path, ROOT, ROOT)
    assert len(script) > 300_000 and syntax_error(script) is None
    assert syntax_error(script + "\nif then\n").startswith("bash: line")


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")
def test_a_patch_after_a_shell_edit_of_its_file_keeps_that_edit(tmp_path):
    """A real task fixed ``add`` with a patch, renamed a function with a Python heredoc, then patched
    ``sub``. Applied alone, the last patch still applies, but the file it writes lacks the rename:
    its whole-file write undid the heredoc's edit, and the bundle's grader failed its own solution."""
    start = tmp_path / "start"
    start.mkdir()
    (start / "calc.py").write_text("def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a + b\n")
    rename = ("python3 - <<'PY'\nfrom pathlib import Path\np = Path('calc.py')\n"
              "p.write_text(p.read_text().replace('def add(', 'def plus('))\nPY")
    fix_sub = "*** Begin Patch\n*** Update File: calc.py\n@@\n def sub(a, b):\n-    return a + b\n+    return a - b\n*** End Patch\n"
    actions = (Action(0, "patch", "c1", ops=tuple(parse_patch(FIX)), workdir=ROOT),
               Action(1, "command", "c2", command=rename, workdir=ROOT),
               Action(2, "patch", "c3", ops=tuple(parse_patch(fix_sub)), workdir=ROOT))
    scratch = tmp_path / "scratch"
    shutil.copytree(start, scratch)
    script = tmp_path / "solve.sh"
    script.write_text(solve_sh(actions, scratch, ROOT, ROOT))
    end = "def plus(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
    assert (scratch / "calc.py").read_text() == end  # what the grader expects is the replay's
    subprocess.run(["bash", str(script)], env={"WORKSPACE": str(start), "PATH": "/usr/bin:/bin"},
                   capture_output=True, cwd=tmp_path, check=True)
    assert (start / "calc.py").read_text() == end, script.read_text()


def test_a_command_left_running_ends_at_the_replay_limit(tmp_path):
    """``npx vitest FILE`` starts vitest's watch mode where ``CI`` is unset: verify's replay ended it
    at its per-command limit, and a bundle's solution ran until the whole check's. Each command of
    solve.sh ends at that limit now (here 1 s), its children with it, and what follows it runs."""
    start = tmp_path / "start"
    start.mkdir()
    (start / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    watch = "echo watching > watch.log; sh -c 'while :; do sleep 1; done' & wait"
    actions = (Action(0, "patch", "c1", ops=tuple(parse_patch(FIX)), workdir=ROOT),
               Action(1, "command", "c2", command=watch, workdir=ROOT),
               Action(2, "command", "c3", command="echo after > after.log", workdir=ROOT))
    scratch = tmp_path / "scratch"
    shutil.copytree(start, scratch)
    script = tmp_path / "solve.sh"
    script.write_text(solve_sh(actions, scratch, ROOT, ROOT))
    done = subprocess.run(["bash", str(script)], capture_output=True, cwd=tmp_path, timeout=30,
                          env={"WORKSPACE": str(start), "PATH": "/usr/bin:/bin", "LOGMINE_COMMAND_S": "1"})
    assert (start / "watch.log").read_text() == "watching\n", done.stderr
    assert (start / "after.log").read_text() == "after\n", script.read_text()
    assert (start / "calc.py").read_text() == "def add(a, b):\n    return a + b\n", script.read_text()


def test_reads_and_test_runs_are_left_out_of_the_solution(tmp_path):
    """A real task's solution replayed 104 commands, most of them reads and Playwright runs of up to
    two minutes each: it ran past the bundle check's limit before its last patch. Reads and test runs
    change no file (the grader runs the tests); edits, builds and scripts stay."""
    start = tmp_path / "start"
    start.mkdir()
    (start / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    commands = ["sed -n '1,200p' calc.py", "python3 -m pytest -q", "git status --short",
                "echo built > build.log", "./scripts/gen.sh"]
    actions = (*(Action(i, "command", f"c{i}", command=c, workdir=ROOT) for i, c in enumerate(commands)),
               Action(len(commands), "patch", "p", ops=tuple(parse_patch(FIX)), workdir=ROOT))
    scratch = tmp_path / "scratch"
    shutil.copytree(start, scratch)
    script = solve_sh(actions, scratch, ROOT, ROOT)
    assert "sed -n" not in script and "pytest" not in script and "git status" not in script, script
    assert "echo built > build.log" in script and "./scripts/gen.sh" in script
    assert script.count("reads or runs tests only: not run") == 3


def test_the_test_runs_a_command_ends_with_are_left_out(tmp_path):
    """A real task cleared Playwright's output, then ran the e2e suite for up to two minutes, seven
    times: the solution keeps the edit and leaves the test run to the grader."""
    start = tmp_path / "start"
    start.mkdir()
    (start / "test-results").mkdir()
    commands = ["rm -rf test-results && PLAYWRIGHT_WORKERS=1 pnpm exec playwright test e2e/a.spec.ts",
                "echo built > build.log && python3 -m pytest -q 2>&1 | tail -20; git status --short",
                "echo 'a && pytest' > quoted.txt", "cd web && npm test"]
    actions = tuple(Action(i, "command", f"c{i}", command=c, workdir=ROOT) for i, c in enumerate(commands))
    script = solve_sh(actions, start, ROOT, ROOT)
    assert "playwright" not in script and "pytest -q" not in script and "npm test" not in script, script
    assert script.count("without the reads and test runs it ends with") == 2
    assert "reads or runs tests only: not run" in script  # `cd web && npm test`: nothing is left
    done = subprocess.run(["bash", "-c", script], env={"WORKSPACE": str(start), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert not (start / "test-results").exists() and (start / "build.log").read_text() == "built\n"
    assert (start / "quoted.txt").read_text() == "a && pytest\n"  # a separator inside quotes is not one


@pytest.mark.parametrize("kind", ["private_key", "private_key_id"])
def test_a_command_ending_in_a_secret_still_parses_once_redacted(kind, tmp_path):
    """Redaction takes a secret's base64 body up to the first character it cannot hold, line ends
    included: a command ending in a cut PEM block or a base64 key took the here-document's closing
    mark with it, and the redacted solution did not parse (the bundle was refused)."""
    from redact.planted import planted

    from logmine.redact import Mask

    secrets = [p for p in planted() if p.kind == kind]
    actions = tuple(Action(i, "command", f"c{i}", command=p.text, workdir=ROOT) for i, p in enumerate(secrets))
    script = solve_sh((*actions, Action(len(actions), "command", "e", command="echo x > y", workdir=ROOT)),
                      tmp_path, ROOT, ROOT)
    for redactor in (Redactor(), Redactor(mask=Mask(bytes(range(32))))):
        redacted = redactor.redact_text(script)
        assert syntax_error(redacted) is None, redacted
        assert not [n for p in secrets for n in p.needles if n in redacted]
