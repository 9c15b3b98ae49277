"""The ``built`` way: one install recipe per task, from its manifests, for a prefix directory or an image.

A :class:`Recipe` is a base image and the shell steps that install a tree's dependencies inside it,
with network at build time only. The same steps serve three places:

* a bubblewrap **prefix** (:mod:`.build`): run on the host in a cache directory holding the tree's
  manifests; the dependency directories it leaves (``.venv``, ``node_modules``) are then bound
  read-only into the replay, offline;
* a **container image** for the Docker/Podman backend;
* the exported bundle's ``environment/Dockerfile`` (:meth:`Recipe.dockerfile`): Harbor and TMax build
  it as it is, so the task starts with its files and its dependencies.

The cache key hashes the base image, the steps and the manifests' contents, so a tree whose
manifests did not change reuses its environment.
"""

from __future__ import annotations

import hashlib
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path

from logmine.environment.detect import Environment

PYTHON_IMAGE = "python:3.11-slim"
NODE_IMAGE = "node:18-slim"
_INSTALL_FILES = ("requirements.txt", "requirements-dev.txt", "requirements-test.txt", "pyproject.toml",
                  "uv.lock", "poetry.lock", "setup.py", "setup.cfg", "Pipfile", "Pipfile.lock", "package.json",
                  "package-lock.json", "yarn.lock", "pnpm-lock.yaml")
_TEST_TOOLS = ("pytest",)
_BUILD_LEFTOVERS = {"build", "dist", "__pycache__", ".venv", "venv", "node_modules", ".git", ".tox"}


@dataclass(frozen=True, slots=True)
class Recipe:
    """How to build a tree's environment: base image, install steps, the files they read, a cache key."""

    base_image: str
    steps: tuple[str, ...]  # run with sh in the tree's root, network on
    inputs: tuple[str, ...]  # manifest paths (relative) the steps read: copied before the steps run
    outputs: tuple[str, ...]  # dependency directories the steps create (relative): bound or kept
    key: str

    def dockerfile(self, seeds: str = "seeds", workdir: str = "/workspace") -> str:
        """A Dockerfile that installs the dependencies, then copies the start state over them."""
        lines = [f"FROM {self.base_image}", f"WORKDIR {workdir}"]
        for rel in self.inputs:
            lines.append(f"COPY {seeds}/{rel} {workdir}/{rel}")
        if self.steps:  # one RUN: every layer is a copy of the image on some storage drivers (vfs)
            lines.append("RUN " + " \\\n    && ".join([self.steps[0], *(f"({s})" for s in self.steps[1:])]))
        bins = [f"{workdir}/{o}/bin" if o != "node_modules" else f"{workdir}/node_modules/.bin" for o in self.outputs]
        if bins:  # bare `pytest`, `jest` resolve as in the session's activated shell
            lines.append(f"ENV PATH={':'.join(bins)}:$PATH")
        lines.append(f"COPY {seeds}/ {workdir}/")
        return "\n".join(lines) + "\n"

    def script(self) -> str:
        """The steps as one shell script (``set -e``), for a prefix build on the host."""
        return "set -eu\n" + "\n".join(self.steps) + "\n"


class NoRecipe(Exception):
    """The tree's environment cannot be built from what it declares (the message says why)."""


def recipe_for(env: Environment, tree: Path) -> Recipe:
    """The recipe for ``env`` in ``tree``; raises :class:`NoRecipe` with the reason when there is none."""
    manifests = [m for m in env.manifests if "/" not in m and m in _INSTALL_FILES]
    python = "python" in env.languages
    node = "node" in env.languages and "package.json" in manifests
    unsupported = sorted(set(env.languages) - {"python", "node"})
    if unsupported and not (python or node):
        raise NoRecipe(f"no build recipe for {', '.join(unsupported)} projects yet")
    steps: list[str] = []
    outputs: list[str] = []
    if python:
        venv = _venv_dir(env)
        python_steps = _python_steps(env, manifests, venv, tree)
        if python_steps != [f"python3 -m venv {shlex.quote(venv)}"]:  # an empty venv installs nothing
            steps += python_steps
            outputs.append(venv)
    if node:
        steps.append("npm ci --no-audit --no-fund" if "package-lock.json" in manifests
                     else "npm install --no-audit --no-fund")
        outputs.append("node_modules")
    if not steps:
        raise NoRecipe("nothing to install: no manifest and no tool that needs one")
    base = NODE_IMAGE if node and not python else PYTHON_IMAGE
    if node and python:
        steps.insert(0, "apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null")
    inputs = tuple(manifests) + (tuple(local_requirements(tree, manifests)) if python else ())
    return Recipe(base, tuple(steps), inputs, tuple(outputs), _key(base, steps, tree, inputs))


def local_requirements(tree: Path, manifests: list[str]) -> list[str]:
    """The files of the local directories the requirements files install (``./libs/foo``,
    ``-e ./pkg``, ``file:./pkg``): the recipe's steps read them, so they are inputs like the manifests
    (a monorepo's own packages, installed into its venv). Build leftovers are not."""
    found: list[str] = []
    for name in (m for m in manifests if m.startswith("requirements")):
        try:
            lines = (tree / name).read_text(errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            words = line.split("#", 1)[0].split()
            target = words[-1].removeprefix("file:") if words else ""
            if not target.startswith(("./", "../")) and target not in (".",):
                continue
            root = (tree / target).resolve()
            if root == tree.resolve() or tree.resolve() not in root.parents or not root.is_dir():
                continue  # the project itself (never installed: its source is the workspace's) or outside
            for path in sorted(root.rglob("*")):
                rel = path.relative_to(tree.resolve())
                leftover = set(rel.parts) & _BUILD_LEFTOVERS or any(p.endswith(".egg-info") for p in rel.parts)
                if path.is_file() and not leftover:
                    found.append(rel.as_posix())
    return list(dict.fromkeys(found))


def _venv_dir(env: Environment) -> str:
    """The venv the session used (relative), or ``.venv`` (uv's and poetry's in-project default)."""
    relative = [v for v in env.venvs if not v.startswith(("/", "~", ".."))]
    return relative[0].removeprefix("./") if relative else ".venv"


def _python_steps(env: Environment, manifests: list[str], venv: str, tree: Path) -> list[str]:
    """Install steps into ``venv``: the lock file's tool, else requirements files and the project's
    declared dependencies (never the project itself: its source is the workspace's, not a copy's)."""
    q = shlex.quote(venv)
    pip = f"{q}/bin/python -m pip install -q --disable-pip-version-check"
    steps: list[str] = []
    if "uv.lock" in manifests:
        steps += ["python3 -m pip install -q --disable-pip-version-check uv",
                  f"UV_PROJECT_ENVIRONMENT={q} python3 -m uv sync -q --frozen --all-extras"]
    elif "poetry.lock" in manifests:
        steps += ["python3 -m pip install -q --disable-pip-version-check poetry",
                  f"python3 -m venv {q}", f"VIRTUAL_ENV=$PWD/{q} python3 -m poetry install -q --no-root"]
    else:
        steps.append(f"python3 -m venv {q}")
        for name in ("requirements.txt", "requirements-dev.txt", "requirements-test.txt"):
            if name in manifests:
                steps.append(f"{pip} -r {name}")
        declared = _declared_dependencies(tree / "pyproject.toml") if "pyproject.toml" in manifests else []
        if declared:
            steps.append(f"{pip} " + " ".join(shlex.quote(d) for d in declared))
    tools = [t for t in _TEST_TOOLS if t in env.tools]
    if tools:
        steps.append(f"{q}/bin/python -c 'import {tools[0]}' 2>/dev/null || {pip} {' '.join(tools)}")
    return steps


def _declared_dependencies(pyproject: Path) -> list[str]:
    """``[project] dependencies`` plus the optional groups named like tests (test, tests, dev)."""
    try:
        project = tomllib.loads(pyproject.read_text()).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return []
    found = [d for d in project.get("dependencies", []) if isinstance(d, str)]
    for group, deps in (project.get("optional-dependencies") or {}).items():
        if group in ("test", "tests", "testing", "dev") and isinstance(deps, list):
            found += [d for d in deps if isinstance(d, str)]
    return list(dict.fromkeys(found))


def _key(base: str, steps: list[str], tree: Path, inputs: tuple[str, ...]) -> str:
    digest = hashlib.sha256(base.encode() + b"\0" + "\n".join(steps).encode())
    for rel in inputs:
        digest.update(b"\0" + rel.encode() + b"\0")
        try:
            digest.update((tree / rel).read_bytes())
        except OSError:
            digest.update(b"<missing>")
    return digest.hexdigest()[:16]
