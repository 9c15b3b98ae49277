"""Drive the real Claude Code CLI (from npm) through a scripted session, and make fixtures from it.

A scripted stand-in for the Anthropic Messages API (``mock_messages``) runs in-process on loopback.
The real CLI is pointed at it with ``ANTHROPIC_BASE_URL`` and a fake ``ANTHROPIC_API_KEY``, in a
throw-away ``HOME`` (``CLAUDE_CONFIG_DIR`` is ``$HOME/.claude``); it runs real commands and makes real
edits in a fresh git repository under ``$HOME/projects/<name>`` and writes the genuine session
files of its version under ``$HOME/.claude/projects/``.

Scenarios live in ``scenarios/claude_<name>/`` (``scenario.json`` and ``repo/``, read by
``codex_driver.load_scenario``); the step kinds are those of ``mock_messages``.  A turn with
``"resume": true`` runs as ``claude -p --resume <session id of the turn before>``.  ``${REPO}`` is
the repository's absolute path.

As a script it regenerates the committed fixtures::

    .ci/install-claude.sh 2.0.50 2.1.332
    python tests/e2e/claude_driver.py --version 2.0.50 --version 2.1.332 --out tests/fixtures/claude-generated

which writes ``<out>/claude-<version>/projects/...`` (the session files, with the temporary home
replaced by ``/home/dev``), ``<out>/claude-<version>/manifest.json`` (what each run did) and
``<out>/scenario-<name>/`` (the scenarios as scripted).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from codex_driver import TurnResult, _run_cli, cli_version, fill_repo, init_repo, load_scenario  # noqa: E402
from mock_messages import MockMessagesServer  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]
VERSIONS = ("2.0.50", "2.1.332")  # November 2025 and November 2026
SCENARIOS = ("claude_fixadd", "claude_subagent")
# A dummy credential for the CLI; the mock never checks it.  Not shaped like a real key.
MOCK_API_KEY = "mock-anthropic-key-not-real"
ALLOWED_TOOLS = "Bash,Edit,Write,Read,Task,Agent,TodoWrite"
FAKE_HOME = "/home/dev"
FAKE_UID = 1000
FAKE_OS = "Linux 6.8.0-generic"
CLI_TMP = re.compile(r"/tmp/claude-\d+/")  # the CLI's scratch folder, named after the user id
DEFAULT_TURN_TIMEOUT_S = 180.0
# The scenario repository's one commit is dated this (the second the 2.1.332 fixadd fixture ran), so
# its hash depends only on the files: tests/verify/test_claude_sessions.py makes it again, and the
# sessions' recorded commit (2.1's session_context) names it
REPO_DATE = "1796526407 +0000"


def claude_bin_for(version: str) -> Path:
    """Where ``.ci/install-claude.sh`` puts a version (or under ``$LOGMINE_CLAUDE_PREFIX``)."""
    prefix = os.environ.get("LOGMINE_CLAUDE_PREFIX")
    root = Path(prefix) if prefix else REPO_ROOT / ".ci" / "claude"
    return root / version / "node_modules" / ".bin" / "claude"


def clean_env(home: Path, base_url: str) -> dict[str, str]:
    """Environment for git and the CLI: hermetic HOME, the mock, no real credentials, no traffic."""
    keep = ("PATH", "LANG", "LC_ALL", "TERM", "TMPDIR", "SYSTEMROOT", "SHELL")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update({
        "HOME": str(home),
        "USER": "dev",
        "LOGNAME": "dev",
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": MOCK_API_KEY,
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "NO_COLOR": "1",
        # an edit and a rerun within one second leave the size and mtime of a module alone: a
        # cached .pyc would run the old code
        "PYTHONDONTWRITEBYTECODE": "1",
    })
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.setdefault("LANG", "C.UTF-8")
    return env


@dataclass
class ClaudeRun:
    version: str | None
    home: Path
    repo: Path
    scenario: dict                      # as the mock played it (``${REPO}`` filled)
    turns: list[TurnResult] = field(default_factory=list)
    session_ids: list[str | None] = field(default_factory=list)  # per turn, from the CLI's output
    requests: list[dict] = field(default_factory=list)
    session_files: list[Path] = field(default_factory=list)

    @property
    def projects_dir(self) -> Path:
        return self.home / ".claude" / "projects"

    @property
    def ok(self) -> bool:
        return len(self.turns) == len(self.scenario["turns"]) and all(
            t.skipped is None and t.returncode == 0 for t in self.turns)

    def calls(self) -> list[dict]:
        """Every tool call the mock answered, in order (see ``MockMessagesServer.tool_calls``)."""
        return [c for r in self.requests for c in r.get("calls", [])]

    def log(self, limit: int = 6000) -> str:
        """The CLI's output per turn, for failure messages."""
        parts = [f"claude {self.version} HOME={self.home} repo={self.repo}"]
        for t in self.turns:
            rc = "TIMEOUT" if t.returncode is None else t.returncode
            parts.append(f"--- turn {t.index}: rc={rc} wall={t.wall_s:.1f}s argv={t.argv[1:]}")
            if t.stderr.strip():
                parts.append("stderr:\n" + t.stderr[-limit:])
            if t.stdout.strip():
                parts.append("stdout:\n" + t.stdout[-limit:])
        parts.append("--- mock requests: " + json.dumps(
            [{k: v for k, v in r.items() if k not in ("tools", "body")} for r in self.requests]))
        parts.append("--- session files: " + ", ".join(str(p) for p in self.session_files))
        return "\n".join(parts)


def session_id_from_stream(stdout: str) -> str | None:
    """The ``session_id`` of a ``--output-format stream-json`` transcript (its ``init`` line)."""
    for line in stdout.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and isinstance(rec.get("session_id"), str):
            return rec["session_id"]
    return None


def run_scenario(claude_bin: Path, scenario: dict, repo_files: dict[str, str], workdir: Path,
                 *, turn_timeout_s: float = DEFAULT_TURN_TIMEOUT_S, keep_bodies: bool = False) -> ClaudeRun:
    """Run ``scenario`` with the real CLI at ``claude_bin`` in a fresh git repo under ``workdir``.

    Never raises for a failing CLI: inspect ``ClaudeRun.turns`` / ``ok`` and show ``log()``.
    """
    claude_bin = Path(claude_bin).absolute()
    home = Path(workdir).absolute() / "home"
    repo = home / "projects" / (scenario.get("name") or "project")
    if home.exists():
        shutil.rmtree(home)
    (home / ".claude").mkdir(parents=True)
    scenario = fill_repo(scenario, repo)
    with MockMessagesServer(scenario, keep_bodies=keep_bodies) as mock:
        env = clean_env(home, mock.base_url)
        init_repo(repo, repo_files, {**env, "GIT_AUTHOR_DATE": REPO_DATE, "GIT_COMMITTER_DATE": REPO_DATE},
                  branch="main")
        run = ClaudeRun(version=cli_version(claude_bin, env), home=home, repo=repo, scenario=scenario)
        for k, turn in enumerate(scenario["turns"]):
            argv = [str(claude_bin), "-p", turn["prompt"], "--output-format", "stream-json", "--verbose",
                    "--allowedTools", ALLOWED_TOOLS]
            if turn.get("resume"):
                argv += ["--resume", str(run.session_ids[-1])]
            mock.begin_turn(k)
            rc, out, err, wall = _run_cli(argv, repo, env, turn_timeout_s)
            run.turns.append(TurnResult(k, argv, rc, out, err, wall))
            run.session_ids.append(session_id_from_stream(out))
            if rc != 0 or run.session_ids[-1] is None:
                break  # later turns would only pile up confusing errors
        run.requests = list(mock.requests)
    run.session_files = sorted(run.projects_dir.rglob("*.jsonl")) if run.projects_dir.is_dir() else []
    return run


# --------------------------------------------------------------------------
# fixtures: the session files with the temporary home replaced
# --------------------------------------------------------------------------

def escape_path(path: str) -> str:
    """A directory as Claude Code names its project folder (every non-alphanumeric becomes ``-``)."""
    return re.sub(r"[^A-Za-z0-9]", "-", path)


def normaliser(home: Path):
    """A function that replaces the temporary home (and its project-folder form) with /home/dev, the
    CLI's scratch folder ``/tmp/claude-<uid>/`` with that of uid 1000, and this machine's kernel
    release with a generic one."""
    pairs: list[tuple[str, str]] = []
    for h in dict.fromkeys((str(home), str(home.resolve()))):
        pairs += [(h, FAKE_HOME), (escape_path(h), escape_path(FAKE_HOME))]
    pairs.append((f"{platform.system()} {platform.release()}", FAKE_OS))  # 2.1's environment attachment
    pairs.sort(key=lambda p: -len(p[0]))

    def norm(text: str) -> str:
        for old, new in pairs:
            text = text.replace(old, new)
        return CLI_TMP.sub(f"/tmp/claude-{FAKE_UID}/", text)
    return norm


def _normalised_json(obj, norm):
    return json.loads(norm(json.dumps(obj)))


def write_fixture(run: ClaudeRun, template: dict, out: Path) -> dict:
    """Copy ``run``'s session files, normalised, under ``out/projects/``; the manifest entry."""
    norm = normaliser(run.home)
    files = []
    for src in run.session_files:
        rel = norm(src.relative_to(run.home / ".claude").as_posix())
        dst = out / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(norm(src.read_text(encoding="utf-8")), encoding="utf-8")
        files.append(rel)
    turns = [{"prompt": t["prompt"], "resume": bool(t.get("resume")),
              "argv": ["claude", *[norm(a) for a in r.argv[1:]]], "returncode": r.returncode,
              "session_id": sid}
             for t, r, sid in zip(template["turns"], run.turns, run.session_ids)]
    calls = [{k: v for k, v in c.items() if k != "step"} for c in run.calls()]
    requests = [{k: r.get(k) for k in ("turn", "script", "index", "stream", "model", "path")}
                for r in run.requests]
    return {"repo": norm(str(run.repo)), "turns": turns, "files": files,
            "calls": _normalised_json(calls, norm), "requests": requests}


LEAK_PATTERNS = (re.compile(rf"/tmp/(?!claude-{FAKE_UID}/)|/work/|/root/"),)


def leaks(root: Path, extra: tuple[str, ...] = ()) -> list[str]:
    """Lines under ``root`` that name a real path of this machine or hold one of ``extra``."""
    found = []
    for p in sorted(root.rglob("*")):
        if not p.is_file():
            continue
        for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if any(rx.search(line) for rx in LEAK_PATTERNS) or any(s and s in line for s in extra):
                found.append(f"{p.relative_to(root)}:{n}")
    return found


def generate(versions: list[str], scenarios: list[str], out: Path, timeout_s: float) -> int:
    """Run every scenario with every version and write the fixtures under ``out``; exit status."""
    status = 0
    for name in scenarios:
        dst = out / f"scenario-{name.removeprefix('claude_')}"
        if dst.exists():
            shutil.rmtree(dst)
        src = Path(__file__).resolve().parent / "scenarios" / name
        shutil.copytree(src, dst)
        for p in list(dst.rglob("*.in")):
            p.rename(p.with_suffix(""))
    for version in versions:
        binary = claude_bin_for(version)
        if not binary.exists():
            print(f"claude {version}: not installed at {binary} (run .ci/install-claude.sh {version})")
            status = 1
            continue
        vdir = out / f"claude-{version}"
        if vdir.exists():
            shutil.rmtree(vdir)
        vdir.mkdir(parents=True)
        manifest = {"version": version, "scenarios": {}}
        for name in scenarios:
            scenario, files, template = load_scenario(name)
            with tempfile.TemporaryDirectory(prefix="claude-gen-") as tmp:
                run = run_scenario(binary, scenario, files, Path(tmp), turn_timeout_s=timeout_s)
                print(f"claude {version} {name}: ok={run.ok} files={len(run.session_files)}")
                if not run.ok or run.version != version:
                    print(run.log(), file=sys.stderr)
                    status = 1
                manifest["scenarios"][template["name"]] = write_fixture(run, template, vdir)
        (vdir / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
        bad = leaks(vdir, (os.environ.get("ANTHROPIC_API_KEY", ""),))
        if bad:
            print(f"claude {version}: machine paths or secrets left in {bad[:10]}", file=sys.stderr)
            status = 1
    return status


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--version", action="append", dest="versions",
                    help=f"CLI version to run (repeatable; default {' '.join(VERSIONS)})")
    ap.add_argument("--scenario", action="append", dest="scenarios",
                    help=f"scenario under tests/e2e/scenarios (repeatable; default {' '.join(SCENARIOS)})")
    ap.add_argument("--out", type=Path, default=REPO_ROOT / "tests" / "fixtures" / "claude-generated")
    ap.add_argument("--timeout", type=float, default=DEFAULT_TURN_TIMEOUT_S, help="seconds per turn")
    args = ap.parse_args(argv)
    return generate(args.versions or list(VERSIONS), args.scenarios or list(SCENARIOS), args.out, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
