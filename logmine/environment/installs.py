"""Where a tree's dependencies install and how: one :class:`Install` per package manager and directory.

A monorepo's software is not at its root alone. The directories the task's commands ran in
(:attr:`~.detect.Environment.dirs`) name the packages that matter; each is installed where its
package manager installs it:

* **Node**: at the workspace root (``pnpm-workspace.yaml``, a ``workspaces`` field, or the nearest
  lock file above the package), with the manager its lock file names (``pnpm-lock.yaml`` → pnpm,
  ``yarn.lock`` → yarn, ``package-lock.json`` → ``npm ci``, ``npm install`` when the lock is out of sync) at the version ``packageManager``
  pins; every workspace package gets its ``node_modules``. Lifecycle scripts of the project itself
  are not run (a ``postinstall`` calling ``git`` or ``husky`` fails on a manifests-only tree):
  npm runs its dependencies' install scripts on copies of the manifests without ``scripts``; pnpm
  and yarn install with ``--ignore-scripts``.
* **Python**: in the nearest directory with a manifest (a uv workspace: the ``uv.lock`` above it),
  into the venv the session used or ``.venv``: ``uv sync --frozen`` from ``uv.lock``, ``poetry
  install`` from ``poetry.lock``, else requirements files and the declared dependencies (project,
  optional and PEP 735 groups named like tests). The project itself is never installed (its source
  is the workspace's); its import root (``src/`` or the project directory) goes on ``PYTHONPATH``
  instead, as an editable install would put it.
* **Rust** and **Go**: ``cargo fetch`` / ``go mod download`` into a cache the replay then reads
  offline. Their registries are named (:attr:`Install.registries`) so a build on a machine that
  cannot reach them says so before it tries.

Package managers that are not part of a base image (pnpm, yarn, uv, poetry) install into
``$LOGMINE_TOOLS``, a directory outside the tree (:mod:`.build` sets it), never into the host's own
Python or Node.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import yaml

PY_MANIFESTS = ("pyproject.toml", "requirements.txt", "requirements-dev.txt", "requirements-test.txt", "uv.lock",
                "poetry.lock", "setup.py", "setup.cfg", "Pipfile")
REQUIREMENTS = ("requirements.txt", "requirements-dev.txt", "requirements-test.txt")
NODE_LOCKS = {"pnpm-lock.yaml": "pnpm", "yarn.lock": "yarn", "package-lock.json": "npm"}
_NODE_CONFIG = (".npmrc", ".yarnrc", ".yarnrc.yml", "pnpm-workspace.yaml")
_TEST_GROUPS = ("test", "tests", "testing", "dev")
_TEST_TOOLS = ("pytest",)
_BUILD_LEFTOVERS = {"build", "dist", "__pycache__", ".venv", "venv", "node_modules", ".git", ".tox"}
# the copies of a project's package.json the install reads, without their lifecycle scripts (a
# `postinstall: git config …` or `prepare: husky` fails on a tree of manifests; the sources they
# build are not there)
_NO_SCRIPTS = ('const fs = require("fs"); for (const f of process.argv.slice(1)) { const p = JSON.parse('
               'fs.readFileSync(f, "utf8")); delete p.scripts; fs.writeFileSync(f, JSON.stringify(p, null, 2)); }')
TOOLS = "$LOGMINE_TOOLS"  # where package managers install (a prefix's tools/, an image's /opt/logmine-tools)
_PIP = "-m pip install -q --disable-pip-version-check"


def _python_tool(name: str) -> str:
    """Install a Python package manager into its own venv under $LOGMINE_TOOLS, linked from its bin/
    (a venv's own python3 on the replay's PATH would shadow the project's)."""
    return (f'{{ [ -x "{TOOLS}/venv/bin/python" ] || python3 -m venv "{TOOLS}/venv"; }} && '
            f'"{TOOLS}/venv/bin/python" {_PIP} {name} && mkdir -p "{TOOLS}/bin" && '
            f'ln -sf "{TOOLS}/venv/bin/{name}" "{TOOLS}/bin/{name}"')


@dataclass
class Install:
    """One package manager's install in one directory of the tree."""

    language: str
    where: str  # relative to the tree root ("." the root)
    steps: list[str] = field(default_factory=list)  # run in the tree root, network on
    inputs: list[str] = field(default_factory=list)  # files the steps read (relative to the tree root)
    outputs: list[str] = field(default_factory=list)  # dependency directories the steps create
    members: list[str] = field(default_factory=list)  # outputs made only where there is something to put
    tools: list[str] = field(default_factory=list)  # steps installing package managers into $LOGMINE_TOOLS
    env: dict[str, str] = field(default_factory=dict)  # for the replay; "{root}"/"{tools}" filled in there
    pythonpath: list[str] = field(default_factory=list)  # import roots (relative) an editable install adds
    registries: list[str] = field(default_factory=list)  # hosts the build must reach (probed first)


def nearest(tree: Path, start: str, names: tuple[str, ...]) -> str | None:
    """The nearest directory at or above ``start`` (relative) holding one of ``names``, or None."""
    path = PurePosixPath(start)
    while True:
        if any((tree / path / n).is_file() for n in names):
            return str(path)
        if str(path) == ".":
            return None
        path = path.parent


def _in(where: str, name: str) -> str:
    return name if where == "." else f"{where}/{name}"


def _cd(where: str, command: str) -> str:
    if where == ".":
        return command
    return f"cd {shlex.quote(where)} && " + (f"{{ {command}; }}" if "||" in command else command)


# --- Node --------------------------------------------------------------------------------------------

def node_roots(tree: Path, dirs: tuple[str, ...]) -> list[str]:
    """The install roots (workspace roots) of the Node packages the commands ran in."""
    roots: list[str] = []
    for start in dirs or (".",):
        package = nearest(tree, start, ("package.json",))
        if package is None:
            continue
        root = package
        path = PurePosixPath(package)
        while str(path) != ".":  # the topmost workspace above the package that counts it a member
            path = path.parent
            globs = workspace_globs(tree, str(path))
            if globs and _member(package, str(path), globs):
                root = str(path)
        if root == package and not any((tree / package / lock).is_file() for lock in NODE_LOCKS):
            root = nearest(tree, package, tuple(NODE_LOCKS)) or package
        roots.append(root)
    return list(dict.fromkeys(roots))


def workspace_globs(tree: Path, where: str) -> list[str]:
    """The member patterns of the workspace declared at ``where`` (``pnpm-workspace.yaml``'s
    ``packages``, ``package.json``'s ``workspaces``); empty when it declares none."""
    globs: object = None
    try:
        globs = (yaml.safe_load((tree / where / "pnpm-workspace.yaml").read_text(errors="replace")) or {}).get("packages")
    except (OSError, yaml.YAMLError, AttributeError):
        pass
    if not globs:
        try:
            globs = json.loads((tree / where / "package.json").read_text(errors="replace")).get("workspaces")
        except (OSError, ValueError, AttributeError):
            globs = None
        if isinstance(globs, dict):  # yarn 1: {"packages": [...], "nohoist": [...]}
            globs = globs.get("packages")
    return [g for g in globs if isinstance(g, str)] if isinstance(globs, list) else []


def _member(package: str, where: str, globs: list[str]) -> bool:
    """Whether the package directory ``package`` is a member of the workspace at ``where``."""
    if package == where:
        return True
    rel = package if where == "." else package.removeprefix(where + "/")
    if where != "." and not package.startswith(where + "/"):
        return False
    included = any(fnmatch.fnmatch(rel, g.removeprefix("./").rstrip("/")) for g in globs if not g.startswith("!"))
    return included and not any(fnmatch.fnmatch(rel, g[1:].removeprefix("./").rstrip("/"))
                                for g in globs if g.startswith("!"))


def node_install(tree: Path, where: str, manifests: tuple[str, ...], versions: dict[str, str]) -> Install:
    """Install the Node workspace (or package) at ``where`` with the manager its lock file names."""
    locks = [lock for lock in NODE_LOCKS if (tree / where / lock).is_file() and _usable_lock(tree / where / lock)]
    manager = NODE_LOCKS[locks[0]] if locks else next((m for m in ("pnpm", "yarn") if m in versions), "npm")
    install = Install("node", where)
    globs = workspace_globs(tree, where)
    below = [m for m in manifests if PurePosixPath(m).name == "package.json"
             and _member(str(PurePosixPath(m).parent), where, globs)]
    workspace = bool(globs)
    install.inputs = [_in(where, "package.json"), *(_in(where, lock) for lock in locks),
                      *(_in(where, c) for c in _NODE_CONFIG if (tree / where / c).is_file())]
    if workspace:  # a member's own node_modules exists only when it has a dependency not hoisted
        install.inputs += below
        install.members = [str(PurePosixPath(m).parent / "node_modules") for m in below
                           if str(PurePosixPath(m).parent) != where]
        install.outputs = list(install.members)
    install.inputs += _yarn_release(tree, where)
    install.inputs += local_packages(tree, [m for m in install.inputs if PurePosixPath(m).name == "package.json"])
    install.inputs = list(dict.fromkeys(install.inputs))
    install.outputs = list(dict.fromkeys([_in(where, "node_modules"), *install.outputs]))
    if manager == "npm":  # dependencies' install scripts run (native modules); the project's own do not
        command = "npm ci" if "package-lock.json" in locks else "npm install"
        manifests_here = " ".join(shlex.quote(m) for m in install.inputs if PurePosixPath(m).name == "package.json")
        install.steps.append(f"node -e {shlex.quote(_NO_SCRIPTS)} {manifests_here}")
        # a lock out of sync with package.json (an agent added a dependency; the author's next
        # `npm install` would have updated the lock): npm ci refuses it, npm install does what the author did
        install.steps.append(_cd(where, "npm ci --no-audit --no-fund || npm install --no-audit --no-fund"
                                 if command == "npm ci" else "npm install --no-audit --no-fund"))
    else:
        version = versions.get(manager) or ("1" if manager == "yarn" else _pnpm_for(tree / where / "pnpm-lock.yaml"))
        install.tools.append(f'npm install -g -q --prefix "{TOOLS}" --no-audit --no-fund {manager}@{version}')
        quiet = "" if manager == "pnpm" else " --non-interactive"
        step = f"{manager} install{quiet} --ignore-scripts"
        if locks:  # a lock out of sync with package.json: install as the author's next install did
            # (pnpm keeps its lock frozen wherever it sees CI, a build included, unless told not to)
            again = f"{step} --no-frozen-lockfile" if manager == "pnpm" else step
            step = f"{manager} install --frozen-lockfile{quiet} --ignore-scripts || {again}"
        install.steps.append(_cd(where, step))
    for package in [str(PurePosixPath(m).parent) for m in install.inputs if PurePosixPath(m).name == "package.json"]:
        install.inputs += _prisma_client(tree, package, install.steps)
    install.registries.append("registry.npmjs.org")
    return install


def _prisma_client(tree: Path, package: str, steps: list[str]) -> list[str]:
    """Where a package uses Prisma with its schema in the default place, ``prisma generate`` after the
    install (the client its code imports is made there, ``node_modules/.prisma/client``, from the
    schema: an input like a manifest) and the files it reads; a failed generation (its engines come
    from Prisma's own servers) is said, and the tests that need the client say what they lack."""
    declared = _dependencies(tree, _in(package, "package.json"), ("dependencies", "devDependencies"))
    schema = _in(package, "prisma/schema.prisma")
    if not declared.keys() & {"prisma", "@prisma/client"} or not (tree / schema).is_file():
        return []
    steps.append(_cd(package, "npx --no-install prisma generate || echo 'logmine: prisma generate failed' >&2"))
    return [schema, *(_in(package, c) for c in ("prisma.config.ts", "prisma.config.js") if (tree / package / c).is_file())]


#: The newest pnpm that writes each lock format: a project that pins none was installed by the pnpm
#: of its lock's day (pnpm 11 no longer reads package.json's "pnpm" field: its overrides are dropped).
_PNPM_BY_LOCK = {"9": "10", "6": "8", "5": "7"}


def _pnpm_for(lock: Path) -> str:
    """The pnpm release to install a project whose ``packageManager`` pins none: by its lock's format."""
    try:
        head = lock.read_text(errors="replace")[:200]
    except OSError:
        return "latest"
    found = re.search(r"^lockfileVersion:\s*['\"]?(\d+)", head, re.M)
    return _PNPM_BY_LOCK.get(found.group(1), "latest") if found else "latest"


def _usable_lock(path: Path) -> bool:
    """Whether ``npm ci`` can install from ``path`` (a package-lock.json an agent wrote by hand, or cut
    short, has no ``lockfileVersion``: ``npm install`` then, as the author's next install would)."""
    if path.name != "package-lock.json":
        return True
    try:
        return isinstance(json.loads(path.read_text(errors="replace")).get("lockfileVersion"), int)
    except (OSError, ValueError, AttributeError):
        return False


def local_packages(tree: Path, manifests: list[str]) -> list[str]:
    """The files of the local packages the manifests depend on (``"file:../../vendor/x"``,
    ``"link:…"``): the install reads them, so they are inputs like the manifests."""
    found: list[str] = []
    for rel in manifests:
        for spec in _dependencies(tree, rel).values():
            if isinstance(spec, str) and spec.startswith(("file:", "link:")):
                found += _files_below(tree, str(PurePosixPath(rel).parent / spec.split(":", 1)[1]))
    return found


def _dependencies(tree: Path, rel: str, fields: tuple[str, ...] = ("dependencies", "devDependencies",
                                                                  "optionalDependencies")) -> dict:
    """The dependencies the ``package.json`` at ``rel`` declares in ``fields``, by name (none when it
    cannot be read)."""
    try:
        data = json.loads((tree / rel).read_text(errors="replace"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {name: spec for f in fields if isinstance(data.get(f), dict) for name, spec in data[f].items()}


def _files_below(tree: Path, rel: str) -> list[str]:
    """The files of the directory ``rel`` (inside ``tree``), build leftovers and dependencies left out."""
    root = (tree / rel).resolve()
    base = tree.resolve()
    if root == base or base not in root.parents or not root.is_dir():
        return []  # the project itself, or outside the tree
    found = []
    for path in sorted(root.rglob("*")):
        parts = path.relative_to(base).parts
        if path.is_file() and not (set(parts) & _BUILD_LEFTOVERS or any(p.endswith(".egg-info") for p in parts)):
            found.append(path.relative_to(base).as_posix())
    return found


def _yarn_release(tree: Path, where: str) -> list[str]:
    """A Yarn 2+ project's own yarn (``.yarnrc.yml``'s ``yarnPath``), which yarn 1 hands over to."""
    try:
        text = (tree / where / ".yarnrc.yml").read_text(errors="replace")
    except OSError:
        return []
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "yarnPath" and (tree / where / value.strip().strip("'\"")).is_file():
            return [_in(where, value.strip().strip("'\""))]
    return []


# --- Python ------------------------------------------------------------------------------------------

def python_roots(tree: Path, dirs: tuple[str, ...]) -> list[str]:
    """The project directories of the Python code the commands ran in (a uv workspace: its root)."""
    roots: list[str] = []
    for start in dirs or (".",):
        root = nearest(tree, start, PY_MANIFESTS)
        if root is None:
            continue
        workspace = nearest(tree, root, ("uv.lock",))
        roots.append(workspace if workspace is not None else root)
    return list(dict.fromkeys(roots))


def python_install(tree: Path, where: str, venv: str, tools: tuple[str, ...], runners: tuple[str, ...]) -> Install:
    """Install the dependencies of the Python project at ``where`` into ``where/venv``."""
    install = Install("python", where)
    files = [n for n in PY_MANIFESTS if (tree / where / n).is_file()]
    install.inputs = [_in(where, n) for n in files]
    path = _in(where, venv)
    q = shlex.quote(path)
    pip = f"{q}/bin/python {_PIP}"
    if "uv.lock" in files or "uv" in (*tools, *runners):
        install.tools.append(_python_tool("uv"))
        install.env.update(UV_NO_SYNC="1", UV_OFFLINE="1", UV_PYTHON_DOWNLOADS="never",
                           UV_CACHE_DIR="/tmp/logmine-uv-cache")
        if venv != ".venv":
            install.env["UV_PROJECT_ENVIRONMENT"] = "{root}/" + path
    if "uv.lock" in files:
        install.steps.append(_cd(where, f'UV_PROJECT_ENVIRONMENT="$PWD/{venv}" UV_PYTHON_INSTALL_DIR="{TOOLS}/python" '
                                        "uv sync -q --frozen --all-extras --all-groups --no-install-workspace"))
    elif "poetry.lock" in files:
        install.tools.append(_python_tool("poetry"))
        install.steps += [f"python3 -m venv {q}",
                          _cd(where, f'VIRTUAL_ENV="$PWD/{venv}" poetry install -q --no-root --all-extras')]
    else:
        install.steps.append(f"python3 -m venv {q}")
        install.steps += [f"{pip} -r {shlex.quote(_in(where, n))}" for n in REQUIREMENTS if n in files]
        declared = declared_dependencies(tree / where / "pyproject.toml") if "pyproject.toml" in files else []
        if declared:
            install.steps.append(f"{pip} " + " ".join(shlex.quote(d) for d in declared))
        install.inputs += local_requirements(tree, where, [n for n in REQUIREMENTS if n in files])
    wanted = [t for t in _TEST_TOOLS if t in tools]
    if wanted:  # a venv uv made has no pip
        add = f"uv pip install -q --python {q}" if "uv.lock" in files else pip
        install.steps.append(f"{q}/bin/python -c 'import {wanted[0]}' 2>/dev/null || {add} {' '.join(wanted)}")
    install.outputs.append(path)
    install.pythonpath = import_roots(tree, where)
    install.registries.append("pypi.org")
    return install


def import_roots(tree: Path, where: str) -> list[str]:
    """Where an editable install of the project at ``where`` would put its packages on ``sys.path``."""
    if not any((tree / where / n).is_file() for n in ("pyproject.toml", "setup.py", "setup.cfg")):
        return []
    src = tree / where / "src"
    if src.is_dir() and any(p.suffix == ".py" or (p / "__init__.py").is_file() for p in src.iterdir()):
        return [_in(where, "src")]
    return [where]


def declared_dependencies(pyproject: Path) -> list[str]:
    """``[project] dependencies`` plus the optional groups and PEP 735 dependency groups named like tests."""
    try:
        data = tomllib.loads(pyproject.read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return []
    project = data.get("project", {})
    found = [d for d in project.get("dependencies", []) if isinstance(d, str)]
    for groups in (project.get("optional-dependencies") or {}, data.get("dependency-groups") or {}):
        for group, deps in groups.items():
            if group in _TEST_GROUPS and isinstance(deps, list):
                found += [d for d in deps if isinstance(d, str)]  # {include-group = …} tables are left out
    return list(dict.fromkeys(found))


def local_requirements(tree: Path, where: str, names: list[str]) -> list[str]:
    """The files of the local directories the requirements files install (``./libs/foo``,
    ``-e ./pkg``, ``file:./pkg``): the steps read them, so they are inputs like the manifests (a
    monorepo's own packages, installed into its venv). Build leftovers are not."""
    found: list[str] = []
    base = (tree / where).resolve()
    for name in names:
        try:
            lines = (base / name).read_text(errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            words = line.split("#", 1)[0].split()
            target = words[-1].removeprefix("file:") if words else ""
            if not target.startswith(("./", "../")) or (base / target).resolve() == base:
                continue  # not a local path, or the project itself (never installed: the workspace's)
            found += _files_below(tree, os.path.relpath(base / target, tree.resolve()))
    return list(dict.fromkeys(found))


# --- Rust and Go -------------------------------------------------------------------------------------

def rust_install(tree: Path, where: str, manifests: tuple[str, ...]) -> Install:
    """``cargo fetch`` of the workspace at ``where`` into ``$LOGMINE_TOOLS/cargo``, read offline after."""
    install = Install("rust", where)
    members = [m for m in manifests if PurePosixPath(m).name == "Cargo.toml" and (where == "." or m.startswith(where))]
    install.inputs = list(dict.fromkeys([*members, *(_in(where, n) for n in ("Cargo.lock", "rust-toolchain",
                                                                              "rust-toolchain.toml")
                                                      if (tree / where / n).is_file())]))
    stubs = " ".join(shlex.quote(str(PurePosixPath(m).parent / "src")) for m in members)
    locked = " --locked" if (tree / where / "Cargo.lock").is_file() else ""
    # cargo reads every member's targets: an empty lib.rs stands in where the tree has no source yet
    # (a manifests-only prefix, an image before its seeds are copied), and goes again after the fetch
    fetch = _cd(where, f'CARGO_HOME="{TOOLS}/cargo" cargo fetch -q{locked}')
    install.steps.append(f'(for d in {stubs}; do [ -e "$d/lib.rs" ] || {{ mkdir -p "$d" && : > "$d/lib.rs" '
                         f'&& echo "$d/lib.rs" >> .logmine-stubs; }}; done; ({fetch}); status=$?; '
                         '[ ! -e .logmine-stubs ] || xargs rm -f < .logmine-stubs; rm -f .logmine-stubs; exit $status)')
    install.env.update(CARGO_HOME="{tools}/cargo", CARGO_NET_OFFLINE="true")
    install.registries.append("index.crates.io")
    return install


def go_install(tree: Path, where: str) -> Install:
    """``go mod download`` of the module at ``where`` into ``$LOGMINE_TOOLS/gomod``, read offline after."""
    install = Install("go", where, inputs=[_in(where, n) for n in ("go.mod", "go.sum") if (tree / where / n).is_file()])
    install.steps.append(_cd(where, f'GOMODCACHE="{TOOLS}/gomod" GOTOOLCHAIN=local go mod download'))
    install.env.update(GOMODCACHE="{tools}/gomod", GOFLAGS="-mod=mod", GOPROXY="off", GOTOOLCHAIN="local")
    proxy = os.environ.get("GOPROXY", "https://proxy.golang.org").split(",")[0]
    host = proxy.split("://", 1)[-1].split("/", 1)[0]
    install.registries.append(host if host not in ("direct", "off", "") else "proxy.golang.org")
    return install
