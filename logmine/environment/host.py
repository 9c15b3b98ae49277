"""Provide a task's environment from this host: what the session used, bound read-only, and nothing else.

The ``host`` way (the default with bubblewrap on the user's own machine) lends the replay what the
developer's shell had when Codex ran:

* the live repository's **git-ignored dependency directories** (``.venv``, ``venv``, ``node_modules``,
  ``target``, ``vendor``, any ignored directory holding a ``pyvenv.cfg``), found with git's own ignore
  rules and mounted into the rebuilt workspace at the same relative path;
* the **interpreters and toolchains** those resolve to: a venv's base interpreter (``pyvenv.cfg``'s
  ``home``), and the installation roots of the tools the commands ran, as this user's ``PATH``
  resolves them (pyenv, asdf, nvm, volta, rustup, uv-managed Pythons, ``/opt/...``);
* a ``PATH`` that resolves ``python3``, ``pytest``, ``node`` … as the user's shell did.

Never the home directory itself and never a credential location (:data:`CREDENTIALS`): a bind that
is one, holds one or lies inside one is refused and noted. System directories (``/usr``, ``/bin``…)
are visible in every sandbox already and are not bound again.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from logmine.environment.detect import Environment
from logmine.redact.paths import HOME_CREDENTIALS

#: Names of git-ignored directories that hold a project's installed dependencies.
DEPENDENCY_DIRS = (".venv", "venv", ".virtualenv", "virtualenv", "env", "node_modules", "target", "vendor",
                   ".tox", ".nox", "__pypackages__", ".bundle", "bower_components", ".yarn", ".pnpm-store")
#: Paths below $HOME that hold credentials or private history: never bound, never inside a bind (the
#: one list of credential places, :mod:`logmine.redact.paths`)
CREDENTIALS = HOME_CREDENTIALS
#: Toolchain roots under $HOME: a tool resolved below one binds the whole root (shims need it).
TOOLCHAIN_ROOTS = (".pyenv", ".asdf", ".nvm", ".volta", ".rustup", ".cargo/bin", ".local/share/uv/python",
                   ".local/share/uv/tools", ".local/share/mise", ".local/share/pnpm", ".bun", ".deno", "go",
                   ".sdkman", ".rbenv", ".goenv", ".nodenv", ".jenv", "miniconda3", "anaconda3", "mambaforge",
                   "miniforge3", ".conda")
SYSTEM = ("/usr/", "/bin/", "/sbin/", "/lib/", "/lib64/", "/etc/")
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True, slots=True)
class HostEnvironment:
    """Read-only binds and a PATH for a sandbox, with what was refused and why."""

    binds: tuple[tuple[str, str], ...] = ()  # (host path, path inside the sandbox)
    path: str = DEFAULT_PATH
    notes: tuple[str, ...] = ()  # refused binds, unresolved tools
    variables: dict[str, str] | None = None  # besides PATH: PYTHONPATH, UV_NO_SYNC, CARGO_HOME …

    @property
    def env(self) -> dict[str, str]:
        return {**(self.variables or {}), "PATH": self.path}


@dataclass
class BindPlan:
    home: Path
    binds: dict[str, str] = field(default_factory=dict)  # destination inside -> host source
    path: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def bind(self, host: Path, inside: str) -> bool:
        reason = refusal(host, self.home)
        if reason:
            self.notes.append(f"not bound: {host} ({reason})")
            return False
        if str(host).startswith(SYSTEM) or not host.exists():
            return True
        if any(inside.startswith(d + "/") or inside == d for d in self.binds):
            return True  # inside a root bound already
        self.binds[inside] = str(host)
        return True

    def result(self, path: str) -> HostEnvironment:
        binds = tuple((src, dst) for dst, src in sorted(self.binds.items()))
        return HostEnvironment(binds=binds, path=path, notes=tuple(self.notes))


def refusal(path: Path, home: Path) -> str | None:
    """Why ``path`` may not be bound into a sandbox, or None."""
    path = Path(os.path.abspath(path))
    if path == home or path in home.parents or path == Path("/"):
        return "the home directory or above"
    for entry in CREDENTIALS:
        secret = home / entry
        if path == secret or secret in path.parents:
            return f"credentials: ~/{entry}"
        if path in secret.parents and secret.exists():
            return f"holds credentials: ~/{entry}"
    return None


def dependency_dirs(repo: Path) -> list[str]:
    """The repository's git-ignored dependency directories, relative to its root."""
    try:
        listing = subprocess.run(
            ["git", "-C", str(repo), "ls-files", "--others", "--ignored", "--exclude-standard", "--directory",
             "--no-empty-directory"], capture_output=True, text=True, timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    found = []
    for line in listing.splitlines():
        rel = line.rstrip("/")
        if not line.endswith("/") or not rel:
            continue
        if any(rel.startswith(f + "/") for f in found):
            continue
        if Path(rel).name in DEPENDENCY_DIRS or (repo / rel / "pyvenv.cfg").is_file():
            found.append(rel)
    return sorted(found)


def host_environment(env: Environment, repo: Path | None, mount_at: str, *, user_path: str | None = None,
                     home: Path | None = None) -> HostEnvironment:
    """What to bind for ``env``: ``repo`` is the live repository, ``mount_at`` its path in the sandbox."""
    plan = BindPlan(home=Path(home or os.path.expanduser("~")).resolve())
    user_path = os.environ.get("PATH", DEFAULT_PATH) if user_path is None else user_path
    venv_bins: list[str] = []
    for rel in dependency_dirs(repo) if repo is not None else []:
        host = repo / rel
        if plan.bind(host, f"{mount_at.rstrip('/')}/{rel}") and (host / "pyvenv.cfg").is_file():
            bind_base_interpreter(plan, host)
            venv_bins.append(f"{mount_at.rstrip('/')}/{rel}/bin")
        if host.name == "node_modules":
            _bind_linked_store(plan, host, repo)
    for tool in env.tools:
        bind_tool(plan, tool, user_path)
    for interpreter in env.interpreters:
        if interpreter.startswith(("/", "~")):
            _bind_install(plan, Path(os.path.expanduser(interpreter)))
    path = [p for p in plan.path if p not in venv_bins]
    # a venv the session never activated still wins for bare `pytest`/`python`, as an activated shell did
    path = venv_bins + path + [p for p in DEFAULT_PATH.split(":") if p not in path]
    variables = rustup_variables(plan)
    if "node" in env.languages:  # a browser test runs under node
        variables.update(browser_variables(plan))
    host = plan.result(":".join(dict.fromkeys(path)))
    return HostEnvironment(host.binds, host.path, host.notes, variables or None)


def rustup_home(plan: BindPlan) -> dict[str, str]:
    """``RUSTUP_HOME``, bound read-only: rustup's proxies (``~/.cargo/bin/cargo``) find their
    toolchains there, not in the sandbox's HOME (without it: "rustup could not choose a version of
    cargo to run")."""
    rustup = Path(os.environ.get("RUSTUP_HOME") or plan.home / ".rustup")
    return {"RUSTUP_HOME": str(rustup)} if rustup.is_dir() and plan.bind(rustup, str(rustup)) else {}


def rustup_variables(plan: BindPlan) -> dict[str, str]:
    """Where the plan binds rustup's proxies: :func:`rustup_home` and, where the user has one, the
    crates cache (``~/.cargo/registry`` and ``~/.cargo/git``, never ``~/.cargo`` itself: it may hold
    credentials), so an offline ``cargo test`` builds from what the user's machine had downloaded."""
    cargo_home = Path(os.environ.get("CARGO_HOME") or plan.home / ".cargo")
    if str(cargo_home / "bin") not in plan.binds:
        return {}
    variables = rustup_home(plan)
    caches = [cargo_home / d for d in ("registry", "git") if (cargo_home / d).is_dir()]
    if caches and all(plan.bind(c, str(c)) for c in caches):
        variables["CARGO_HOME"] = str(cargo_home)
    return variables


#: Where Playwright and Cypress keep the browsers they download, which no offline install fetches:
#: the variable that moves each, and its folder in the user's cache directory by default.
BROWSER_CACHES = (("PLAYWRIGHT_BROWSERS_PATH", "ms-playwright"), ("CYPRESS_CACHE_FOLDER", "Cypress"))


def browser_variables(plan: BindPlan) -> dict[str, str]:
    """The browsers the user downloaded for Playwright or Cypress tests, bound read-only at their own
    paths and named by the variable each runner reads (the sandbox's HOME is not the user's, and
    without them a browser test fails: ``Executable doesn't exist at …/ms-playwright/…``)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or plan.home / ".cache")
    variables = {}
    for name, folder in BROWSER_CACHES:
        chosen = os.environ.get(name)
        if chosen == "0":  # Playwright's browsers inside node_modules, bound with it
            continue
        where = Path(chosen) if chosen else cache / folder
        if where.is_dir() and plan.bind(where, str(where)):
            variables[name] = str(where)
    return variables


def _bind_linked_store(plan: BindPlan, node_modules: Path, repo: Path) -> None:
    """Packages a node_modules links to outside the repository (pnpm's global virtual store, a
    ``yarn link``): the toolchain root holding them is bound (``~/.local/share/pnpm``), never the home
    directory; a link elsewhere under it is noted, not followed."""
    entries = []
    try:
        for entry in node_modules.iterdir():
            entries += list(entry.iterdir()) if entry.name.startswith("@") and entry.is_dir() else [entry]
    except OSError:
        return
    for entry in entries[:5000]:
        if not entry.is_symlink():
            continue
        target = Path(os.path.realpath(entry))
        if target == repo.resolve() or repo.resolve() in target.parents:
            continue  # a workspace package: inside the mounted tree
        root = next((plan.home / r for r in TOOLCHAIN_ROOTS if plan.home / r in target.parents), None)
        if root is None:
            note = f"not bound: {entry.relative_to(repo)} links outside the repository to {target}"
            if note not in plan.notes:
                plan.notes.append(note)
            continue
        plan.bind(root, str(root))


def bind_base_interpreter(plan: BindPlan, venv: Path) -> None:
    try:
        config = (venv / "pyvenv.cfg").read_text(errors="replace")
    except OSError:
        return
    for line in config.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            _bind_install(plan, Path(value.strip()) / "python")
    python = venv / "bin" / "python"
    if python.exists():  # the interpreter the venv's link resolves to, not the venv itself
        _bind_install(plan, Path(os.path.realpath(python)))


def bind_tool(plan: BindPlan, tool: str, user_path: str) -> None:
    """Bind the installation ``tool`` resolves to on ``user_path`` and put its directory on the PATH."""
    found = shutil.which(tool, path=user_path)
    if found is None:
        plan.notes.append(f"{tool}: not on this host's PATH")
        return
    directory = str(Path(found).parent)
    _bind_install(plan, Path(found))
    venv = Path(found).parent.parent
    if (venv / "pyvenv.cfg").is_file():  # a venv's script: its shebang needs the venv's base interpreter
        bind_base_interpreter(plan, venv)
    if directory not in plan.path:
        plan.path.append(directory)


def _bind_install(plan: BindPlan, program: Path) -> None:
    """Bind the installation ``program`` belongs to (through its links), not just the file."""
    for candidate in dict.fromkeys([program, Path(os.path.realpath(program))]):
        if str(candidate).startswith(SYSTEM):
            continue  # visible in every sandbox
        root = _install_root(candidate, plan.home)
        if root is not None:
            plan.bind(root, str(root))


def _install_root(program: Path, home: Path) -> Path | None:
    for entry in TOOLCHAIN_ROOTS:
        root = home / entry
        if program == root or root in program.parents:
            return root
    if home in program.parents:  # e.g. ~/.local/bin/uv: the file alone
        return program
    if program.parent.name == "bin" and program.parent.parent != Path("/"):
        return program.parent.parent  # /opt/python3.12/bin/python → /opt/python3.12
    return program.parent
