"""Drive the real OpenAI Codex CLI (from npm) through a scripted session.

A scripted stand-in for the OpenAI Responses API runs in-process on loopback
(127.0.0.1, an ephemeral port, in a daemon thread).  The real CLI is pointed at
it through a throw-away ``CODEX_HOME``; it then executes real shell commands
and real ``apply_patch`` edits in a real git repository and writes the genuine
session files of its version.  Tests ingest those files and compare what was
ingested with what the script made the CLI do.

Scenario format (a dict, usually loaded from ``scenarios/<name>/scenario.json``)::

    {"model": "mock-model",
     "turns": [{"prompt": "...",
                "steps": [[step, ...], ...]},     # one list per model request
               ...]}

A step is one of

    {"run": "cmd", "expect_exit": 0}      a shell command, in whichever shell tool
                                          the client offers (``expect_exit`` is
                                          for the test, the driver ignores it)
    {"patch": "*** Begin Patch ..."}      an apply_patch edit, in whichever form
                                          the client offers
    {"say": "text"}                       an assistant message
    {"think": "text"}                     a reasoning summary
    {"plan": [{"step": ..., "status": ...}]}   update_plan, if offered

Request *i* of turn *k* is answered with ``turns[k]["steps"][i]``; past the
end of a turn's list the server answers with a closing assistant message, so
a client that makes an extra request cannot shift later turns.

Entry point: :func:`run_scenario`.  :func:`load_scenario` reads a scenario
directory and fills in generated fake secrets (see :func:`fake_secrets`).
"""
from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import string
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mock_responses import MockResponsesServer

__all__ = [
    "ScenarioRun",
    "MockResponsesServer",
    "run_scenario",
    "load_scenario",
    "fake_secrets",
    "scenario_prompts",
    "scenario_run_steps",
    "scenario_patch_ops",
    "fill_repo",
    "SCENARIOS_DIR",
]

SCENARIOS_DIR = Path(__file__).resolve().parent / "scenarios"
UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
DEFAULT_TURN_TIMEOUT_S = 180.0
# A dummy credential for the CLI; the mock never checks it.
MOCK_API_KEY = "sk-mock-not-a-real-key"


# --------------------------------------------------------------------------
# CODEX_HOME, repo, CLI
# --------------------------------------------------------------------------

def _toml_str(s: str) -> str:
    return json.dumps(s)  # a JSON string literal is a valid TOML basic string


def write_codex_home(codex_home: Path, model: str, base_url: str) -> None:
    """config.toml + model catalog pointing the CLI at the mock provider."""
    codex_home.mkdir(parents=True, exist_ok=True)
    catalog = {"models": [{
        "slug": model, "display_name": model, "description": "scripted", "priority": 50,
        "additional_speed_tiers": [], "service_tiers": [], "availability_nux": None, "upgrade": None,
        "default_reasoning_level": "medium",
        "supported_reasoning_levels": [{"effort": "medium", "description": "m"}],
        "shell_type": "shell_command", "visibility": "list", "supported_in_api": True,
        "supports_reasoning_summaries": True, "support_verbosity": False,
        "apply_patch_tool_type": "freeform", "web_search_tool_type": "text",
        "supports_parallel_tool_calls": False, "supports_image_detail_original": False,
        "experimental_supported_tools": [], "supports_search_tool": False,
        "context_window": 200000, "max_context_window": 200000,
        "effective_context_window_percent": 95,
        "truncation_policy": {"mode": "tokens", "limit": 10000},
        "input_modalities": ["text"], "base_instructions": "You are a coding agent.",
    }]}
    (codex_home / "catalog.json").write_text(json.dumps(catalog, indent=1))
    (codex_home / "config.toml").write_text(
        f"model = {_toml_str(model)}\n"
        'model_provider = "mock"\n'
        'approval_policy = "never"\n'
        'sandbox_mode = "danger-full-access"\n'
        f"model_catalog_json = {_toml_str(str(codex_home / 'catalog.json'))}\n"
        "\n[model_providers.mock]\n"
        'name = "mock"\n'
        f"base_url = {_toml_str(base_url)}\n"
        'wire_api = "responses"\n'
    )


def _git(repo: Path, *args: str, env: dict[str, str]) -> str:
    p = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed ({p.returncode}): {p.stderr}")
    return p.stdout.strip()


def init_repo(repo: Path, files: dict[str, str], env: dict[str, str], branch: str = "main") -> str:
    """Write the files, commit them to a fresh git repo; returns the commit hash."""
    repo.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        p = repo / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    _git(repo, "init", "-q", env=env)
    _git(repo, "symbolic-ref", "HEAD", f"refs/heads/{branch}", env=env)
    _git(repo, "config", "user.email", "e2e@example.invalid", env=env)
    _git(repo, "config", "user.name", "logmine e2e", env=env)
    _git(repo, "config", "commit.gpgsign", "false", env=env)
    _git(repo, "add", "-A", env=env)
    _git(repo, "commit", "-q", "-m", "initial state", env=env)
    return _git(repo, "rev-parse", "HEAD", env=env)


def _clean_env(home: Path, codex_home: Path) -> dict[str, str]:
    """Environment for git and the CLI: hermetic HOME, no real credentials."""
    keep = ("PATH", "LANG", "LC_ALL", "TERM", "TMPDIR", "SYSTEMROOT", "USER", "LOGNAME", "SHELL")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update({
        "HOME": str(home),
        "CODEX_HOME": str(codex_home),
        "OPENAI_API_KEY": MOCK_API_KEY,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "NO_COLOR": "1",
        "RUST_BACKTRACE": "1",
        "CODEX_DISABLE_UPDATE_CHECK": "1",
    })
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.setdefault("LANG", "C.UTF-8")
    return env


def cli_version(codex_bin: Path, env: dict[str, str] | None = None) -> str | None:
    try:
        p = subprocess.run([str(codex_bin), "--version"], capture_output=True, text=True,
                           timeout=60, env=env, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"(\d+\.\d+\.\d+\S*)", p.stdout + p.stderr)
    return m.group(1) if m else None


def supports_exec_resume(codex_bin: Path, env: dict[str, str] | None = None) -> bool:
    try:
        p = subprocess.run([str(codex_bin), "exec", "--help"], capture_output=True, text=True,
                           timeout=60, env=env, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return re.search(r"^\s+resume\b", p.stdout, re.M) is not None


@dataclass
class TurnResult:
    index: int
    argv: list[str]
    returncode: int | None  # None: timed out (the process group was killed)
    stdout: str
    stderr: str
    wall_s: float
    skipped: str | None = None  # why the turn was not run


@dataclass
class ScenarioRun:
    codex_home: Path
    session_files: list[Path]
    repo: Path
    version: str | None
    initial_commit: str
    branch: str
    session_id: str | None
    turns: list[TurnResult] = field(default_factory=list)
    requests: list[dict] = field(default_factory=list)
    scenario: dict | None = None  # as the mock played it (``${REPO}`` filled)

    @property
    def sessions_dir(self) -> Path:
        return self.codex_home / "sessions"

    @property
    def turns_run(self) -> int:
        return sum(1 for t in self.turns if t.skipped is None)

    @property
    def ok(self) -> bool:
        return all(t.skipped is None and t.returncode == 0 for t in self.turns)

    def tool_forms(self) -> list[dict]:
        """The tool form the mock picked for each run/patch/plan step, in order."""
        return [f for r in self.requests if "answered" in r for f in r["answered"]
                if f["step"] in ("run", "patch", "plan")]

    def log(self, limit: int = 6000) -> str:
        """The CLI's output per turn, for failure messages."""
        parts = [f"codex {self.version} CODEX_HOME={self.codex_home} repo={self.repo}"]
        for t in self.turns:
            if t.skipped:
                parts.append(f"--- turn {t.index}: skipped: {t.skipped}")
                continue
            rc = "TIMEOUT" if t.returncode is None else t.returncode
            parts.append(f"--- turn {t.index}: rc={rc} wall={t.wall_s:.1f}s argv={t.argv[1:3]}...")
            if t.stderr.strip():
                parts.append("stderr:\n" + t.stderr[-limit:])
            if t.stdout.strip():
                parts.append("stdout:\n" + t.stdout[-limit:])
        parts.append("--- mock requests: " + json.dumps(
            [{k: v for k, v in r.items() if k != "tools"} for r in self.requests]))
        parts.append("--- session files: " + ", ".join(str(p) for p in self.session_files))
        return "\n".join(parts)


def _run_cli(argv: list[str], cwd: Path, env: dict[str, str], timeout_s: float) -> tuple[int | None, str, str, float]:
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            errors="replace", start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
        rc: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
        rc = None
    return rc, out, err, time.monotonic() - t0


def _session_files(codex_home: Path) -> list[Path]:
    d = codex_home / "sessions"
    return sorted(d.rglob("*.jsonl")) if d.is_dir() else []


def _session_id_of(path: Path) -> str | None:
    """The session id from the session_meta line (new layout) or the first line
    (legacy layout), else from the file name."""
    try:
        with path.open() as f:
            for _, line in zip(range(5), f):
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(rec, dict):
                    continue
                payload = rec.get("payload") if rec.get("type") == "session_meta" else rec
                if isinstance(payload, dict):
                    sid = payload.get("id") or payload.get("session_id")
                    if isinstance(sid, str) and UUID_RE.fullmatch(sid):
                        return sid
    except OSError:
        pass
    found = UUID_RE.findall(path.name)
    return found[-1] if found else None


def run_scenario(codex_bin: Path, scenario: dict, repo_files: dict[str, str], workdir: Path,
                 *, turn_timeout_s: float = DEFAULT_TURN_TIMEOUT_S,
                 repo_name: str | None = None,
                 prepare: Callable[[Path], None] | None = None,
                 path_prefix: tuple[str, ...] = ()) -> ScenarioRun:
    """Run ``scenario`` with the real CLI at ``codex_bin`` in a fresh git repo
    under ``workdir``.

    The first turn is ``codex exec PROMPT``; later turns are
    ``codex exec resume <session-id> PROMPT`` where the client supports it
    (otherwise they are recorded as skipped).  Never raises for a failing CLI:
    inspect ``ScenarioRun.turns`` / ``ScenarioRun.ok`` and show ``log()``.

    ``prepare(repo)`` runs after the initial commit, before the CLI: it makes what lives outside
    git (a git-ignored ``.venv``, ``node_modules``).  ``path_prefix``: directories put first on the
    CLI's PATH (a venv whose ``pytest`` the session's shell finds).  ``${REPO}`` in the scenario is
    the repository's absolute path (:func:`fill_repo`), known only here.
    """
    codex_bin = Path(codex_bin).absolute()
    workdir = Path(workdir).absolute()
    name = repo_name or scenario.get("name") or "project"
    home = workdir / "home"
    codex_home = home / ".codex"
    repo = workdir / "projects" / name
    scenario = fill_repo(scenario, repo)
    for p in (codex_home, repo):
        if p.exists():
            shutil.rmtree(p)
    home.mkdir(parents=True, exist_ok=True)
    env = _clean_env(home, codex_home)
    branch = "main"
    commit = init_repo(repo, repo_files, env, branch=branch)
    if prepare is not None:
        prepare(repo)
    if path_prefix:
        env["PATH"] = os.pathsep.join([*path_prefix, env["PATH"]])
    version = cli_version(codex_bin, env)
    can_resume = supports_exec_resume(codex_bin, env)

    run = ScenarioRun(codex_home=codex_home, session_files=[], repo=repo, version=version,
                      initial_commit=commit, branch=branch, session_id=None, scenario=scenario)
    with MockResponsesServer(scenario) as mock:
        write_codex_home(codex_home, scenario.get("model", "mock-model"), mock.base_url)
        for k, turn in enumerate(scenario["turns"]):
            prompt = turn["prompt"]
            if k == 0:
                argv = [str(codex_bin), "exec", "--skip-git-repo-check", prompt]
            else:
                if not can_resume:
                    run.turns.append(TurnResult(k, [], None, "", "", 0.0,
                                                skipped="client has no `exec resume`"))
                    continue
                if run.session_id is None:
                    run.turns.append(TurnResult(k, [], None, "", "", 0.0,
                                                skipped="no session id from the first turn"))
                    continue
                argv = [str(codex_bin), "exec", "--skip-git-repo-check", "resume",
                        run.session_id, prompt]
            mock.begin_turn(k)
            rc, out, err, wall = _run_cli(argv, repo, env, turn_timeout_s)
            run.turns.append(TurnResult(k, argv, rc, out, err, wall))
            if k == 0:
                files = _session_files(codex_home)
                if files:
                    newest = max(files, key=lambda p: p.stat().st_mtime)
                    run.session_id = _session_id_of(newest)
            if rc != 0:
                break  # later turns would only pile up confusing errors
        run.requests = list(mock.requests)
    run.session_files = _session_files(codex_home)
    return run


# --------------------------------------------------------------------------
# scenarios and fake secrets
# --------------------------------------------------------------------------

def fake_secrets(seed: str = "logmine-e2e") -> dict[str, str]:
    """Obviously fake credentials in the real formats, generated (so that no
    token-shaped literal sits in the repository for secret scanners to flag).

    Each embeds a FAKE/TEST marker but keeps the exact shape detectors match:
      FAKE_OPENAI_KEY    sk-proj- + 56 [A-Za-z0-9_-]
      FAKE_GITHUB_TOKEN  ghp_ + 36 [A-Za-z0-9]
      FAKE_AWS_KEY_ID    AKIA + 16 [A-Z0-9]
    """
    rnd = random.Random(seed)
    alnum = string.ascii_letters + string.digits
    upper = string.ascii_uppercase + string.digits

    def pick(chars: str, n: int) -> str:
        return "".join(rnd.choice(chars) for _ in range(n))

    return {
        "FAKE_OPENAI_KEY": "sk-proj-" + "FAKEe2eTEST" + pick(alnum, 45),
        "FAKE_GITHUB_TOKEN": "ghp_" + "FAKEe2e" + pick(alnum, 29),
        "FAKE_AWS_KEY_ID": "AKIA" + "FAKE" + pick(upper, 12),
    }


_PLACEHOLDER = re.compile(r"\$\{(FAKE_[A-Z0-9_]+)\}")


def fill(text: str, secrets: dict[str, str]) -> str:
    return _PLACEHOLDER.sub(lambda m: secrets[m.group(1)], text)


def fill_repo(obj: Any, repo: Path) -> Any:
    """``obj`` (a scenario, a step, a text) with ``${REPO}`` replaced by the repository's absolute path."""
    if isinstance(obj, str):
        return obj.replace("${REPO}", str(repo))
    if isinstance(obj, list):
        return [fill_repo(x, repo) for x in obj]
    if isinstance(obj, dict):
        return {k: fill_repo(v, repo) for k, v in obj.items()}
    return obj


def _fill_obj(obj: Any, secrets: dict[str, str]) -> Any:
    if isinstance(obj, str):
        return fill(obj, secrets)
    if isinstance(obj, list):
        return [_fill_obj(x, secrets) for x in obj]
    if isinstance(obj, dict):
        return {k: _fill_obj(v, secrets) for k, v in obj.items()}
    return obj


def load_scenario(name: str, secrets: dict[str, str] | None = None,
                  base: Path = SCENARIOS_DIR) -> tuple[dict, dict[str, str], dict]:
    """Read ``<base>/<name>/scenario.json`` and ``<base>/<name>/repo/**``.

    Repo files are stored with a ``.in`` suffix (stripped here) so that pytest
    never collects the scenario's own test files.  ``${FAKE_...}`` placeholders
    are filled with :func:`fake_secrets`.  Returns (filled scenario, filled repo
    files, template scenario); the template keeps the placeholders, so a test
    can tell where a secret was planted.
    """
    secrets = fake_secrets() if secrets is None else secrets
    d = base / name
    template = json.loads((d / "scenario.json").read_text())
    template.setdefault("name", name)
    files: dict[str, str] = {}
    repo = d / "repo"
    for p in sorted(repo.rglob("*")):
        if p.is_file():
            rel = p.relative_to(repo).as_posix()
            if rel.endswith(".in"):
                rel = rel[:-3]
            files[rel] = fill(p.read_text(), secrets)
    return _fill_obj(template, secrets), files, template


def scenario_prompts(scenario: dict) -> list[str]:
    return [t["prompt"] for t in scenario["turns"]]


def scenario_run_steps(scenario: dict) -> list[dict]:
    """Every ``run`` step, in order, with its turn index."""
    return [{**st, "turn": k} for k, t in enumerate(scenario["turns"])
            for req in t["steps"] for st in req if "run" in st]


_PATCH_OP = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+?)\s*$")
_PATCH_MOVE = re.compile(r"^\*\*\* Move to: (.+?)\s*$")


def scenario_patch_ops(scenario: dict) -> list[dict]:
    """One entry per file operation of every ``patch`` step, in order:
    {"call": n, "op": add|update|delete, "path": ..., "move_path": ... | None}."""
    out: list[dict] = []
    n = 0
    for t in scenario["turns"]:
        for req in t["steps"]:
            for st in req:
                if "patch" not in st:
                    continue
                for line in st["patch"].splitlines():
                    m = _PATCH_OP.match(line)
                    if m:
                        out.append({"call": n, "op": m.group(1).lower(), "path": m.group(2),
                                    "move_path": None})
                        continue
                    m = _PATCH_MOVE.match(line)
                    if m and out and out[-1]["call"] == n:
                        out[-1]["move_path"] = m.group(1)
                n += 1
    return out
