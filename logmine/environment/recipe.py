"""The ``built`` way: one install recipe per task, from its manifests, for a prefix directory or an image.

A :class:`Recipe` is a base image and the shell steps that install a tree's dependencies inside it,
with network at build time only. The same steps serve three places:

* a bubblewrap **prefix** (:mod:`.build`): run on the host in a cache directory holding the tree's
  manifests; the dependency directories it leaves (``.venv``, ``node_modules``) are then bound
  read-only into the replay, offline;
* a **container image** for the Docker/Podman backend;
* the exported bundle's ``environment/Dockerfile`` (:meth:`Recipe.dockerfile`): Harbor and TMax build
  it as it is, so the task starts with its files and its dependencies.

What is installed where (workspace roots, subdirectory projects, the package manager and its
version) is :mod:`.installs`' business; this module puts the installs together, picks the base image
from the versions the tree pins (``.python-version``/``requires-python``, ``.nvmrc``/``engines``),
and keys the result. The cache key hashes the base image, the steps and the manifests' contents,
so every task of a repository whose manifests did not change shares one environment (SWE-smith
builds one image per repository, not per task).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from logmine.environment.detect import TOOLS, Environment
from logmine.environment.installs import (
    PY_MANIFESTS,
    Install,
    go_install,
    nearest,
    node_install,
    node_roots,
    python_install,
    python_roots,
    rust_install,
)
from logmine.errors import LogmineError

PYTHON_IMAGE = "python:3.11-slim"
NODE_IMAGE = "node:18-slim"
IMAGE_TOOLS = "/opt/logmine-tools"  # $LOGMINE_TOOLS in an image
_PYTHONS = ("3.11", "3.12", "3.13", "3.10", "3.9", "3.14")  # preferred first: the default image's
_NODES = (18, 20, 22, 24)
_ORDER = ("python", "node", "rust", "go")
_EXTRA = {"node": "apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null",
          "python": "apt-get update -qq && apt-get install -y -qq python3 python3-venv python3-pip >/dev/null"}


@dataclass(frozen=True, slots=True)
class Recipe:
    """How to build a tree's environment: base image, install steps, the files they read, a cache key."""

    base_image: str
    steps: tuple[str, ...]  # run with sh in the tree's root, network on
    inputs: tuple[str, ...]  # manifest paths (relative) the steps read: copied before the steps run
    outputs: tuple[str, ...]  # dependency directories the steps create (relative): bound or kept
    key: str
    tools: tuple[str, ...] = ()  # steps installing package managers into $LOGMINE_TOOLS (run first)
    image_steps: tuple[str, ...] = ()  # only in a container: what the base image lacks (nodejs on python)
    env: tuple[tuple[str, str], ...] = ()  # for the replay: "{root}" the workspace, "{tools}" $LOGMINE_TOOLS
    pythonpath: tuple[str, ...] = ()  # import roots relative to the workspace (an editable install's)
    registries: tuple[str, ...] = ()  # hosts the build must reach
    members: tuple[str, ...] = ()  # outputs a workspace member has only when it needs one (not required)
    browsers: tuple[str, ...] = ()  # only in a container, after the install: what browser tests download

    def replay_env(self, root: str, tools: str) -> dict[str, str]:
        """The variables a replay in this environment needs, for a workspace at ``root``."""
        found = {k: v.replace("{root}", root.rstrip("/")).replace("{tools}", tools) for k, v in self.env}
        if self.pythonpath:
            found["PYTHONPATH"] = ":".join(f"{root.rstrip('/')}/{p}".removesuffix("/.") for p in self.pythonpath)
        return found

    def bins(self, root: str) -> list[str]:
        """Directories of the outputs whose programs the session ran bare (``pytest``; ``vitest`` from
        the root's ``node_modules``, as before any workspace)."""
        return [f"{root.rstrip('/')}/{o}" + ("/.bin" if o == "node_modules" else "/bin") for o in self.outputs
                if not o.endswith("node_modules") or o == "node_modules"]

    def dockerfile(self, seeds: str = "seeds", workdir: str = "/workspace", inputs_from: str | None = None) -> str:
        """A Dockerfile that installs the dependencies, then copies the start state over them; the
        install reads the manifests from ``inputs_from`` (relative to the build context) when given,
        else from ``seeds``."""
        lines = [f"FROM {self.base_image}", f"WORKDIR {workdir}"]
        if self.tools:  # pnpm, uv: on the PATH of the install steps and of the task
            lines.insert(1, f"ENV LOGMINE_TOOLS={IMAGE_TOOLS} PATH={IMAGE_TOOLS}/bin:$PATH")
        for rel in self.inputs:
            lines.append(f"COPY {inputs_from or seeds}/{rel} {workdir}/{rel}")
        # the browsers last: by the project's own Playwright or Cypress, once it is installed
        steps = [*self.image_steps, *self.tools, *self.steps, *self.browsers]
        if steps:  # one RUN: every layer is a copy of the image on some storage drivers (vfs)
            lines.append("RUN " + " \\\n    && ".join(f"({s})" for s in steps))  # a step's `cd` stays in it
        bins = self.bins(workdir)
        env = sorted(self.replay_env(workdir, IMAGE_TOOLS).items())
        if bins:  # bare `pytest`, `jest`, `pnpm` resolve as in the session's activated shell
            env.insert(0, ("PATH", f"{':'.join(bins)}:$PATH"))
        if env:  # one instruction: each is a layer, a copy of the image on vfs storage
            lines.append("ENV " + " \\\n    ".join(f"{key}={value}" for key, value in env))
        lines.append(f"COPY {seeds}/ {workdir}/")
        return "\n".join(lines) + "\n"

    def script(self) -> str:
        """The steps as one shell script (``set -e``), for a prefix build on the host (``$LOGMINE_TOOLS``
        set by the caller); never the image steps: the host's own system is not ours to change."""
        # each in its own subshell: a step's `cd backend && uv sync` must not move the steps after it
        return "set -eu\n" + "".join(f"(\n{step}\n)\n" for step in [*self.tools, *self.steps])


class NoRecipe(LogmineError):
    """The tree's environment cannot be built from what it declares (the message says why)."""


def recipe_for(env: Environment, tree: Path) -> Recipe:
    """The recipe for ``env`` in ``tree``; raises :class:`NoRecipe` with the reason when there is none."""
    installs = _installs(env, tree)
    if not installs:
        unsupported = sorted(set(env.languages) - {"python", "node", "rust", "go"})
        if unsupported:
            raise NoRecipe(f"no build recipe for {', '.join(unsupported)} projects yet")
        raise NoRecipe("nothing to install: no manifest of the languages the commands ran")
    languages = [i.language for i in installs]
    ran = {TOOLS.get(t) for t in env.tools}
    primary = next(lang for lang in sorted(languages, key=lambda lang: (lang not in ran, _ORDER.index(lang))))
    base = base_image(primary, env)
    image_steps = [_EXTRA[lang] for lang in ("node", "python") if lang in languages and lang != primary]
    steps = [s for i in installs for s in i.steps]
    tools = list(dict.fromkeys(t for i in installs for t in i.tools))
    env_vars = {k: v for i in installs for k, v in i.env.items()}
    inputs = tuple(dict.fromkeys(f for i in installs for f in i.inputs if (tree / f).is_file()))
    outputs = tuple(dict.fromkeys(o for i in installs for o in i.outputs))
    pythonpath = tuple(dict.fromkeys(p for i in installs for p in i.pythonpath))
    registries = tuple(dict.fromkeys(r for i in installs for r in i.registries))
    members = tuple(dict.fromkeys(m for i in installs for m in i.members))
    browsers = [_BROWSERS[t] for t in sorted(_BROWSERS) if t in env.tools and "node" in languages]
    key = _key(base, [*image_steps, *tools, *steps, *browsers, repr(sorted(env_vars.items())), repr(pythonpath)],
               tree, inputs)
    return Recipe(base, tuple(steps), inputs, outputs, key, tuple(tools), tuple(image_steps),
                  tuple(sorted(env_vars.items())), pythonpath, registries, members, tuple(browsers))


#: The browsers a browser test runner downloads, never part of a package install: an image gets them
#: (with the system libraries they need) from the project's own runner; a host replay binds the
#: user's (:func:`logmine.environment.host.browser_variables`).
_BROWSERS = {t: f"{c} || echo 'logmine: {t} could not download its browsers' >&2"  # a browser test says so later
             for t, c in (("cypress", "npx cypress install"), ("playwright", "npx playwright install --with-deps"))}


def _installs(env: Environment, tree: Path) -> list[Install]:
    """The installs ``env`` needs: a language's whose tools the commands ran; when they ran none of any
    language's (``make test``, ``./run.sh``), those the manifests declare."""
    installs: list[Install] = []
    dirs = env.dirs or (".",)
    ran = {TOOLS.get(t) for t in env.tools} & set(_ORDER)
    wanted = ran or set(env.languages)
    if "python" in wanted:
        # run from a directory with no Python manifest above it (`python -m pytest teacher/tests` at the
        # root of a repository whose project is teacher/): the projects the manifests found declare
        declared = tuple(sorted({str(PurePosixPath(m).parent) for m in env.manifests if PurePosixPath(m).name in PY_MANIFESTS}))
        roots = python_roots(tree, dirs) or python_roots(tree, declared) or ["."]
        for root in roots:
            install = python_install(tree, root, _venv_dir(env, root), env.tools, env.runners)
            empty = install.steps == [f"python3 -m venv {install.outputs[0]}"] and not install.tools
            if empty and install.outputs[0] not in env.venvs:  # an empty venv no command ran installs nothing
                install.steps, install.outputs = [], []
            if install.steps or install.pythonpath:  # a src layout needs its import root even then
                installs.append(install)
    if "node" in wanted:
        manifests = env.manifests
        installs += [node_install(tree, root, manifests, dict(env.versions)) for root in node_roots(tree, dirs)]
    if "cargo" in env.tools:
        roots = dict.fromkeys(nearest(tree, d, ("Cargo.lock",)) or nearest(tree, d, ("Cargo.toml",)) for d in dirs)
        installs += [rust_install(tree, root, env.manifests) for root in roots if root is not None]
    if "go" in env.tools:
        roots = dict.fromkeys(nearest(tree, d, ("go.mod",)) for d in dirs)
        installs += [go_install(tree, root) for root in roots if root is not None]
    return installs


def _venv_dir(env: Environment, root: str) -> str:
    """The venv the session used for the project at ``root`` (relative to it), or ``.venv`` (uv's and
    poetry's in-project default)."""
    for venv in env.venvs:
        venv = venv.removeprefix("./")
        if venv.startswith(("/", "~", "..")):
            continue
        if root != "." and venv.startswith(root + "/"):
            return venv[len(root) + 1:]
        if "/" not in venv:
            return venv
    return ".venv"


def base_image(language: str, env: Environment) -> str:
    """The base image for ``language`` at the version the tree pins (the default one when it pins none)."""
    if language == "python":
        return f"python:{_python_version(env.version('python'))}-slim"
    if language == "node":
        return f"node:{_node_major(env.version('node'))}-slim"
    if language == "rust":
        return "rust:1-slim"
    return "golang:" + ".".join((env.version("go") or "1").split(".")[:2])


def python_version(env: Environment) -> str:
    """The Python (``3.11``) ``env``'s image has: the version it pins, else the first of the maintained
    ones its constraint admits, else the default image's."""
    return _python_version(env.version("python"))


def _python_version(pin: str | None) -> str:
    if not pin:
        return PYTHON_IMAGE.split(":")[1].removesuffix("-slim")
    exact = re.fullmatch(r"(?:python|cpython-?)?(3\.\d+)(?:\.\d+)?", pin.strip())
    if exact:
        return exact.group(1)
    try:
        spec = SpecifierSet(pin)
    except InvalidSpecifier:
        return _python_version(None)
    return next((v for v in _PYTHONS if spec.contains(f"{v}.50", prereleases=True)), _python_version(None))


def _node_major(pin: str | None) -> int:
    """The first of the maintained majors (18 first: the default image's) that ``pin`` admits."""
    if not pin:
        return int(NODE_IMAGE.split(":")[1].split("-")[0])
    exact = re.fullmatch(r"v?(\d+)(?:\.[\dx*]+){0,2}", pin.strip())
    if exact:
        return int(exact.group(1))
    for major in _NODES:
        if any(_admits(alternative, major) for alternative in pin.split("||")):
            return major
    return _node_major(None)


def _admits(comparators: str, major: int) -> bool:
    """Whether some version of ``major`` meets every comparator (``>=18.17 <21``, ``^20``, ``~18``)."""
    for version in ((major, 0, 0), (major, 999, 999)):
        ok = True
        for item in comparators.split():
            match = re.fullmatch(r"(>=|<=|>|<|=|\^|~)?v?(\d+)(?:\.(\d+|x|\*))?(?:\.(\d+|x|\*))?", item)
            if not match:
                continue
            op, want = match.group(1) or "=", tuple(int(g) if g and g.isdigit() else 0 for g in match.groups()[1:])
            if op in ("^", "~", "="):
                ok &= version[0] == want[0]
            elif op == ">=":
                ok &= version >= want
            elif op == ">":
                ok &= version > want
            elif op == "<=":
                ok &= version <= want
            else:
                ok &= version < want
        if ok:
            return True
    return False


def _key(base: str, steps: list[str], tree: Path, inputs: tuple[str, ...]) -> str:
    digest = hashlib.sha256(base.encode() + b"\0" + "\n".join(steps).encode())
    for rel in inputs:
        digest.update(b"\0" + rel.encode() + b"\0")
        try:
            digest.update((tree / rel).read_bytes())
        except OSError:
            digest.update(b"<missing>")
    return digest.hexdigest()[:16]
