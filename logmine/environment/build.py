"""Build a :class:`~.recipe.Recipe` once, with network, and reuse it offline: a prefix or an image.

* :func:`build_prefix` (bubblewrap): the recipe's steps run on the host, in
  ``<cache>/<key>/tree`` holding the tree's manifests, with ``$LOGMINE_TOOLS`` at
  ``<cache>/<key>/tools`` (pnpm, yarn, uv: never installed into the host's own Python or Node);
  the dependency directories they leave, and the tools, are bound read-only into replays. The build
  happens in place (venv scripts record their absolute path), under a lock, and a ``.complete``
  marker written last makes a half-built prefix a rebuild.
* :func:`build_image` (Docker/Podman): ``<engine> build --network host`` of the recipe's Dockerfile
  over a context holding only the manifests, tagged ``logmine-env:<key>``.

Both raise :class:`EnvironmentUnavailable` with the reason (no network, a failing step): the task is
then ``unscored`` with that reason, never ``fails_after``. A registry the recipe needs (crates.io,
the Go module proxy, PyPI, npm) is tried first, so a machine that cannot reach one says
``toolchain registry unreachable: HOST`` instead of a build log; configured mirrors and proxies are
left to the tools.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from logmine.environment.host import (
    DEFAULT_PATH,
    BindPlan,
    HostEnvironment,
    bind_base_interpreter,
    bind_tool,
    browser_variables,
    rustup_home,
)
from logmine.environment.recipe import Recipe
from logmine.errors import LogmineError
from logmine.locations import cache_dir, default_cache_dir
from logmine.sandbox.hostview import SCRATCH_NAMES

BUILD_TIMEOUT_S = 900.0
_LOG_TAIL = 600
_FIRST_ERROR = re.compile(r"(?m)^\s*(npm ERR!|npm error|ERR_PNPM_|\S*ERR_PNPM_\w+|ERROR:|error:|error\[|Error:|×)")
_FAILED: dict[str, str] = {}
_REACHABLE: dict[str, str | None] = {}  # registry host -> why it cannot be reached (None: it can)
# a configured mirror or proxy: the registry's own host is not what the tool will ask
_MIRRORS = {"pypi.org": ("PIP_INDEX_URL", "PIP_NO_INDEX", "PIP_FIND_LINKS", "UV_INDEX_URL", "UV_DEFAULT_INDEX"),
            "registry.npmjs.org": ("npm_config_registry", "NPM_CONFIG_REGISTRY")}
_PROXIES = ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")
_OFFLINE = re.compile(r"Could not resolve host|Temporary failure in name resolution|getaddrinfo|ENOTFOUND|"
                      r"EAI_AGAIN|ECONNREFUSED|Network is unreachable|No route to host|Failed to establish a new "
                      r"connection|Connection refused|ConnectTimeout|NewConnectionError", re.I)


class EnvironmentUnavailable(LogmineError):
    """The environment cannot be provided (offline build, failing step, no engine): the reason."""


@dataclass(frozen=True, slots=True)
class Built:
    """A built environment: where it is, whether this call built it, and how long that took."""

    where: str  # a prefix directory or an image tag
    cached: bool
    seconds: float


def cache_root() -> Path:
    """``envs/`` in logmine's cache directory (:mod:`logmine.locations`; its default place when the
    cache is ``off``: a replay needs the environment)."""
    return (cache_dir() or default_cache_dir()) / "envs"


def build_prefix(recipe: Recipe, tree: Path, *, cache: Path | None = None, timeout_s: float = BUILD_TIMEOUT_S,
                 python_bin: str | None = None) -> Built:
    """The prefix for ``recipe`` (built now from ``tree``'s manifests unless cached). ``python_bin``: a
    directory put first on the build's ``PATH``, whose ``python3`` makes the venvs (the session's own
    version, :func:`logmine.environment.pythons.python_bin`; the recipe's key must say which)."""
    root = (cache or cache_root()) / recipe.key
    done = root / ".complete"
    started = time.monotonic()
    if done.exists():
        with contextlib.suppress(OSError):  # a prefix built before a scratch name was added (a read-only cache: not)
            _scratch_mountpoints(root / "tree")
        return Built(str(root / "tree"), True, 0.0)
    if str(root) in _FAILED:  # one failing build (offline, say) per process, not one per task
        raise EnvironmentUnavailable(_FAILED[str(root)])
    unreachable = registries_unreachable(recipe)
    if unreachable:
        _FAILED[str(root)] = unreachable
        raise EnvironmentUnavailable(unreachable)
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():  # another process built it while this one waited
            return Built(str(root / "tree"), True, time.monotonic() - started)
        work, tools = root / "tree", root / "tools"
        for stale in (work, tools):
            shutil.rmtree(stale, ignore_errors=True)
        work.mkdir()
        for rel in recipe.inputs:
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(tree / rel, work / rel)
        env = {**os.environ, "PIP_NO_INPUT": "1", "npm_config_update_notifier": "false",
               "LOGMINE_TOOLS": str(tools),
               "PATH": f"{tools}/bin:" + (f"{python_bin}:" if python_bin else "") + os.environ.get("PATH", DEFAULT_PATH)}
        env.pop("VIRTUAL_ENV", None)
        try:
            run_step(["sh", "-c", recipe.script()], work, env, timeout_s, "prefix build")
        except EnvironmentUnavailable as exc:
            _FAILED[str(root)] = str(exc)
            raise
        _scratch_mountpoints(work)
        done.write_text(recipe.base_image + "\n")
    return Built(str(work), False, time.monotonic() - started)


def _scratch_mountpoints(tree: Path) -> None:
    """An empty ``.vite``/``.cache`` in each installed ``node_modules``: where the sandbox mounts a
    writable tmpfs over the read-only bind, for the caches test runners write (vitest)."""
    for top, dirs, _ in os.walk(tree):
        if "node_modules" in dirs:
            for name in SCRATCH_NAMES:
                os.makedirs(os.path.join(top, "node_modules", name), exist_ok=True)
        dirs[:] = [d for d in dirs if d != "node_modules" and not d.startswith(".")]


def prefix_environment(recipe: Recipe, prefix: Path, mount_at: str) -> HostEnvironment:
    """Binds, PATH and variables for replaying in a built prefix: its dependency directories at the
    workspace's paths (and at their own, where venv scripts point), the interpreter its venv was made
    from, its tools (pnpm, uv) and the host's Node that built it."""
    plan = BindPlan(home=Path(os.path.expanduser("~")).resolve())
    path: list[str] = []
    for rel in recipe.outputs:
        host = prefix / rel
        if not host.exists():
            continue
        plan.binds[f"{mount_at.rstrip('/')}/{rel}"] = str(host)
        plan.binds[str(host)] = str(host)  # where the venv's scripts point
        if (host / "pyvenv.cfg").is_file():
            bind_base_interpreter(plan, host)
            path.append(f"{mount_at.rstrip('/')}/{rel}/bin")
    tools = prefix.parent / "tools"
    if tools.is_dir():
        plan.binds[str(tools)] = str(tools)
        path.append(f"{tools}/bin")
        if (tools / "venv" / "pyvenv.cfg").is_file():  # poetry's script runs on the venv's interpreter
            bind_base_interpreter(plan, tools / "venv")
    # the toolchains the build ran with (nvm's node, rustup's cargo): the replay runs the same ones
    variables, extra = dict(recipe.env), {}
    for tool, used in (("node", any(o.endswith("node_modules") for o in recipe.outputs)),
                       ("cargo", "CARGO_HOME" in variables), ("go", "GOMODCACHE" in variables)):
        if used:
            bind_tool(plan, tool, os.environ.get("PATH", DEFAULT_PATH))
    if "CARGO_HOME" in variables:
        extra.update(rustup_home(plan))
    if any(o.endswith("node_modules") for o in recipe.outputs):
        extra.update(browser_variables(plan))
    host = plan.result(":".join(dict.fromkeys(path + plan.path + DEFAULT_PATH.split(":"))))
    return HostEnvironment(host.binds, host.path, host.notes, {**recipe.replay_env(mount_at, str(tools)), **extra})


def build_image(recipe: Recipe, tree: Path, engine: str, *, timeout_s: float = BUILD_TIMEOUT_S,
                workdir: str = "/workspace") -> Built:
    """The image for ``recipe`` (``logmine-env:<key>``), built with ``engine`` unless present.

    ``workdir``: where the image holds the dependency directories (verify mounts the workspace at
    the session's own path and links them from there)."""
    suffix = "" if workdir == "/workspace" else "-" + hashlib.sha256(workdir.encode()).hexdigest()[:6]
    tag = f"logmine-env:{recipe.key}{suffix}"
    started = time.monotonic()
    if shutil.which(engine) is None:
        raise EnvironmentUnavailable(f"{engine} is not installed")
    present = subprocess.run([engine, "image", "exists", tag] if engine == "podman" else
                             [engine, "image", "inspect", tag], capture_output=True)
    if present.returncode == 0:
        return Built(tag, True, 0.0)
    unreachable = registries_unreachable(recipe)
    if unreachable:
        raise EnvironmentUnavailable(unreachable)
    with tempfile.TemporaryDirectory(prefix="logmine-envbuild-") as context:
        seeds = Path(context) / "seeds"
        for rel in recipe.inputs:
            (seeds / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(tree / rel, seeds / rel)
        seeds.mkdir(exist_ok=True)
        lines = recipe.dockerfile(workdir=workdir).splitlines()[:-1]  # without the final copy of the whole start state
        (Path(context) / "Dockerfile").write_text("\n".join(lines) + "\n")
        run_step([engine, "build", *build_options(engine), "--network", "host", "-q", "-t", tag, context], Path(context),
             dict(os.environ), timeout_s, f"{engine} build")
    return Built(tag, False, time.monotonic() - started)


def build_options(engine: str) -> list[str]:
    """Options of ``ENGINE build`` beyond the defaults: Podman commits only the final image
    (``--layers=false``): on vfs storage every intermediate layer is a full copy of the image, which
    doubles a build's time, and logmine reuses its builds by tag, never by layer."""
    return ["--layers=false"] if Path(engine).name == "podman" else []


def registries_unreachable(recipe: Recipe, timeout_s: float = 5.0) -> str | None:
    """``toolchain registry unreachable: HOST (why)`` for the first registry of ``recipe`` this machine
    cannot open a connection to, or None. A host behind a configured mirror or proxy is not tried."""
    if any(os.environ.get(v) for v in _PROXIES):
        return None
    for host in recipe.registries:
        if any(os.environ.get(v) for v in _MIRRORS.get(host, ())):
            continue
        if host not in _REACHABLE:
            try:
                socket.create_connection((host, 443), timeout=timeout_s).close()
                _REACHABLE[host] = None
            except OSError as exc:
                _REACHABLE[host] = exc.strerror or type(exc).__name__
        if _REACHABLE[host] is not None:
            return f"toolchain registry unreachable: {host} ({_REACHABLE[host]})"
    return None


def run_step(argv: list[str], cwd: Path, env: dict, timeout_s: float, what: str) -> None:
    """Run one build step (``what`` names it); raises :class:`EnvironmentUnavailable` with the reason
    when it times out, cannot start or fails (the failure's first error line, a registry unreachable)."""
    try:
        done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout_s,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise EnvironmentUnavailable(f"{what} timed out after {timeout_s:.0f} s") from exc
    except OSError as exc:
        raise EnvironmentUnavailable(f"{what} could not start: {exc.strerror}") from exc
    if done.returncode != 0:
        offline = ", registry unreachable" if _OFFLINE.search(done.stderr + done.stdout) else ""
        raise EnvironmentUnavailable(f"{what} failed (exit {done.returncode}{offline}): "
                                     f"{failure_excerpt(done.stderr or done.stdout)}")


def failure_excerpt(log: str) -> str:
    """What a failed install says: from its first error line (``npm error``, ``ERR_PNPM_…``, pip's
    ``ERROR:``, ``error:``), not the usage text npm prints after it; else the log's tail. Of pnpm's
    errors, the last one (its fallback install's) when they differ."""
    first = _FIRST_ERROR.search(log)
    codes = list(re.finditer(r"ERR_PNPM_\w+", log))
    if codes and codes[-1].group(0) != codes[0].group(0):  # `pnpm install --frozen-lockfile || pnpm install`:
        first = codes[-1]  # the fallback's error is the one that stood
    text = log[first.start():] if first else log
    words = " ".join(text.split())
    return words[:_LOG_TAIL] if first else words[-_LOG_TAIL:]
