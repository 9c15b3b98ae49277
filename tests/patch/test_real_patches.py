"""Every real patch in the fixture logs parses and replays as Codex recorded it.

Expected messages are Codex's own (codex-rs/apply-patch): a change in wording is a change in
fidelity.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from patch_support import FIXTURES

from logmine.patch import (
    PatchError,
    apply_patch,
    extract_patch,
    parse_patch,
)

# --------------------------------------------------------------------------- real patches from real logs


def tool_calls(log: Path):
    """(form, patch text or None, output text) for each apply_patch-carrying call in a rollout."""
    calls, outputs = [], {}
    for line in log.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        item = record.get("payload", record) if isinstance(record, dict) else None
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind in ("function_call_output", "custom_tool_call_output"):
            out = item.get("output")
            outputs[item.get("call_id")] = out if isinstance(out, str) else json.dumps(out)
        elif kind == "custom_tool_call" and item.get("name") == "apply_patch":
            calls.append((item.get("call_id"), "custom", item.get("input")))
        elif kind == "function_call":
            found = _patch_of_function_call(item.get("name"), item.get("arguments") or "")
            if found is not None:
                calls.append((item.get("call_id"), *found))
    return [(form, text, outputs.get(call_id, "")) for call_id, form, text in calls]


def _patch_of_function_call(name, arguments):
    try:
        args = json.loads(arguments)
    except ValueError:
        return None
    if not isinstance(args, dict):
        return None
    if name == "apply_patch":
        return "function", args.get("input")
    command = args.get("command") or args.get("cmd")
    if isinstance(command, list) and command and command[0] in ("apply_patch", "applypatch"):
        return "argv", command[1]
    if command and "*** Begin Patch" in str(command) and "apply_patch" in str(command):
        return "heredoc", extract_patch(command)
    return None


def codex_parse_error(output: str) -> str | None:
    """The parse error Codex reported for a call, if it rejected the patch text itself."""
    for marker in ("error: invalid hunk", "error: invalid patch"):
        if marker in output:
            start = output.index(marker) + len("error: ")
            return output[start:].split("\n")[0].rstrip('"}')
    return None


def public_logs() -> list[Path]:
    logs = sorted((FIXTURES / "codex-public").glob("*.jsonl")) + sorted(
        (FIXTURES / "codex-generated").glob("*/*.jsonl")
    )
    if not logs:
        pytest.skip("fixture logs not available")
    return logs


def test_every_real_patch_parses_as_codex_parsed_it():
    parsed, rejected, forms = 0, 0, set()
    for log in public_logs():
        for form, text, output in tool_calls(log):
            assert text is not None, f"{log.name}: {form} call without a patch"
            forms.add(form)
            expected_error = codex_parse_error(output)
            if expected_error is None:
                assert parse_patch(text), f"{log.name}: no ops"
                parsed += 1
            else:
                with pytest.raises(PatchError) as info:
                    parse_patch(text)
                assert str(info.value).startswith(expected_error[:150]), log.name
                rejected += 1
    print(f"real patches: {parsed} parsed, {rejected} rejected as Codex rejected them")
    assert forms == {"custom", "function", "argv", "heredoc"}
    assert parsed >= 230 and rejected >= 7


def test_real_sessions_replay_where_their_files_are_known(tmp_path):
    """Replay each session's patches in order; files an Add File created can be checked exactly.

    Wherever every file a patch touches was created earlier in the same session, Codex's recorded
    outcome (success, or a failure to apply) must be ours too.
    """
    agreed = 0
    for n, log in enumerate(public_logs()):
        root, known = tmp_path / str(n), set()
        root.mkdir()
        for _, text, output in tool_calls(log):
            if codex_parse_error(output) is not None:
                continue
            ops = parse_patch(text)
            codex_ok = "Success. Updated the following files:" in output
            if not all(op.op == "add" or op.path in known for op in ops):
                ops = [op for op in ops if op.op == "add"] if codex_ok else []
                if not ops:
                    continue
            try:
                apply_patch(ops, root)
                ours_ok = True
            except PatchError:
                ours_ok = False
            if len(ops) == len(parse_patch(text)):
                assert ours_ok == codex_ok, f"{log.name}: {text[:200]!r} -> {output[:200]!r}"
                agreed += 1
            if ours_ok:
                known.update(op.target for op in ops if op.op != "delete")
    assert agreed >= 70


def scenario_copy(tmp_path: Path) -> Path:
    source = FIXTURES / "codex-generated" / "scenario-fixadd" / "repo"
    if not source.is_dir():
        pytest.skip("scenario fixture not available")
    repo = tmp_path / "repo"
    shutil.copytree(source, repo)
    for path in repo.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)  # the fixture is read-only
    return repo


def run_pytest(repo: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=repo,
        capture_output=True,
        timeout=120,
    )


def test_scenario_patches_fix_the_repo(tmp_path):
    repo = scenario_copy(tmp_path)
    scenario = json.loads((FIXTURES / "codex-generated" / "scenario-fixadd" / "scenario.json").read_text())
    turns = [[s["patch"] for req in turn["steps"] for s in req if "patch" in s] for turn in scenario["turns"]]
    assert run_pytest(repo).returncode != 0
    for patch in turns[0]:
        assert apply_patch(parse_patch(patch), repo) == [("M", "calc.py")]
    assert run_pytest(repo).returncode == 0
    for patch in turns[1]:
        apply_patch(parse_patch(patch), repo)
    assert (
        repo / "calc.py"
    ).read_text() == "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
    done = run_pytest(repo)
    assert done.returncode == 0 and b"2 passed" in done.stdout


@pytest.mark.parametrize("version", ["codex-0.20.0", "codex-0.45.0", "codex-0.90.0", "codex-0.171.0"])
def test_generated_sessions_replay_with_codex_summaries(tmp_path, version):
    """Real Codex CLIs ran the fix-add scenario; our applier must print what each one printed."""
    logs = sorted((FIXTURES / "codex-generated" / version).glob("*.jsonl"))
    if not logs:
        pytest.skip("fixture logs not available")
    repo = scenario_copy(tmp_path)
    calls = tool_calls(logs[0])
    assert calls
    for _, text, output in calls:
        summary = apply_patch(parse_patch(text), repo)
        printed = "Success. Updated the following files:\n" + "".join(f"{a} {p}\n" for a, p in summary)
        assert printed in json.loads(output)["output"] if output.startswith("{") else printed in output
    assert run_pytest(repo).returncode == 0
