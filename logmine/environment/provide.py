"""Provide a task's software environment to its sandbox, one way at a time (docs/environments.md).

The ways (``mode``):

* ``host``: bind what the session used on this machine, read-only (:mod:`logmine.environment.host`);
* ``built``: a prefix (bubblewrap) or an image (Docker/Podman) built from the tree's manifests with
  network, cached, used offline (:mod:`logmine.environment.build`);
* ``none``: the sandbox's own toolchain, as before environments existed.

Host mode cannot provide what the session used when a virtualenv the commands ran from, or a
dependency directory the recipe would create (``.venv``, ``node_modules``), is not in the live
repository. A way that cannot be provided (offline build, no engine) raises
:class:`~logmine.environment.build.EnvironmentUnavailable` with its reason; the caller tries the next
(verify in the order of its ``env_mode``, :mod:`logmine.verify.environment`; export's bundle check
``built``, ``host``, ``none``).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path

from logmine.environment.build import (
    Built,
    EnvironmentUnavailable,
    build_image,
    build_prefix,
    prefix_environment,
)
from logmine.environment.detect import Environment
from logmine.environment.host import DEFAULT_PATH, dependency_dirs, host_environment
from logmine.environment.pythons import python_bin, venv_python
from logmine.environment.recipe import (
    IMAGE_TOOLS,
    NODE_IMAGE,
    PYTHON_IMAGE,
    NoRecipe,
    Recipe,
    python_version,
    recipe_for,
)

IMAGE_PREFIX = "/opt/logmine-env"  # where a verify image holds the dependency directories


@dataclass(frozen=True, slots=True)
class Provided:
    """How the sandbox gets the task's environment: binds and PATH (bwrap) or an image (containers)."""

    mode: str  # host | built | none
    reason: str
    binds: tuple[tuple[str, str], ...] = ()
    env: dict[str, str] | None = None
    image: str | None = None
    links: tuple[tuple[str, str], ...] = ()  # containers: (path in the tree, where the image holds it)
    recipe: Recipe | None = None
    notes: tuple[str, ...] = ()
    seconds: float = 0.0
    cached: bool | None = None


def sandbox_options(provided: Provided) -> dict:
    """The ``open_sandbox`` keywords for ``provided``: its binds, environment variables and image."""
    extra = {k: v for k, v in (("binds", provided.binds), ("env", provided.env)) if v}
    return {**extra, **({"image": provided.image} if provided.image else {})}


def provide(mode: str, env: Environment, tree: Path, root: str, live: Path | None, backend: str) -> Provided:
    """Provide ``env`` one way; raises :class:`EnvironmentUnavailable` with the reason when it cannot.

    ``tree``: the rebuilt start tree (its manifests); ``root``: where the sandbox mounts it;
    ``live``: the live repository on this host (host mode binds its ignored dependency directories).
    A built prefix makes its venvs with the Python its image would have where ``env`` pins it (the
    session's own, ``.python-version``, or a constraint the host's ``python3`` is outside of) and this
    host has it (:mod:`logmine.environment.pythons`).
    """
    if mode == "none":
        return Provided("none", "asked for: the sandbox's own toolchain")
    if mode == "host":
        return _host(env, tree, root, live, backend)
    return _built(env, tree, root, backend)


def _host(env: Environment, tree: Path, root: str, live: Path | None, backend: str) -> Provided:
    if backend != "bwrap":
        raise EnvironmentUnavailable(f"host mode needs the bwrap backend, not {backend}")
    missing = _missing_on_host(env, tree, live)
    if missing:
        raise EnvironmentUnavailable(missing)
    host = host_environment(env, live, root)
    deps = [dst.removeprefix(root.rstrip("/") + "/") for _, dst in host.binds if dst.startswith(root.rstrip("/") + "/")]
    reason = f"bound from this host: {', '.join(deps)}" if deps else "this host's toolchain"
    return Provided("host", reason, host.binds, host.env, notes=host.notes)


def _missing_on_host(env: Environment, tree: Path, live: Path | None) -> str | None:
    """Why the host cannot provide ``env`` (a dependency directory it needs is absent), or None."""
    present = set(dependency_dirs(live)) if live is not None else set()
    wanted = {v.removeprefix("./") for v in env.venvs if not v.startswith(("/", "~", ".."))}
    try:
        recipe = recipe_for(env, tree)
    except NoRecipe:
        recipe = None
    if recipe is not None and recipe.inputs:  # dependencies declared by manifests: their directories
        wanted |= set(recipe.outputs) - set(recipe.members)
    absent = sorted(w for w in wanted if w not in present)
    if not absent:
        return None
    where = f"the live repository {live}" if live is not None else "no live repository"
    return f"{', '.join(absent)} not in {where}"


def _built(env: Environment, tree: Path, root: str, backend: str) -> Provided:
    try:
        recipe = recipe_for(env, tree)
    except NoRecipe as exc:
        if backend == "bwrap" and env.manifests:
            raise EnvironmentUnavailable(f"no build recipe: {exc}") from exc
        if backend == "bwrap":  # declares nothing to install: the sandbox's toolchain is the built one
            return Provided("built", f"the sandbox's own toolchain (nothing to install: {exc})")
        image = NODE_IMAGE if "node" in env.languages and "python" not in env.languages else PYTHON_IMAGE
        return Provided("built", f"base image {image} (nothing to install: {exc})", image=image)
    started = time.monotonic()
    if backend == "bwrap":
        makes_venv = any("-m venv" in step or "uv sync" in step for step in (*recipe.tools, *recipe.steps))
        python = venv_python(env.version("python"), python_version(env)) if makes_venv else None
        pythons = python_bin(python) if python else None
        if pythons:  # the image's Python (the session's, or the tree's pin) makes the venvs: its own prefix
            recipe = dataclasses.replace(recipe, key=f"{recipe.key}-py{python}")
        built: Built = build_prefix(recipe, tree, python_bin=pythons)
        host = prefix_environment(recipe, Path(built.where), root)
        reason = _built_reason(recipe, built) + (f"; venvs made with Python {python} ({pythons})" if pythons else "")
        return Provided("built", reason, host.binds, host.env, recipe=recipe,
                        notes=host.notes, seconds=time.monotonic() - started, cached=built.cached)
    # the image keeps the dependencies outside the workspace mount; links in the tree point there
    built = build_image(recipe, tree, backend, workdir=IMAGE_PREFIX)
    bins = [f"{root.rstrip('/')}/{o}/bin" for o in recipe.outputs if not o.endswith("node_modules")]
    bins += [f"{IMAGE_TOOLS}/bin"] if recipe.tools else []
    return Provided("built", _built_reason(recipe, built), image=built.where, recipe=recipe,
                    links=tuple((o, f"{IMAGE_PREFIX}/{o}") for o in recipe.outputs),
                    env={**recipe.replay_env(root, IMAGE_TOOLS), "PATH": ":".join([*bins, DEFAULT_PATH])},
                    seconds=time.monotonic() - started, cached=built.cached)


def _built_reason(recipe: Recipe, built: Built) -> str:
    how = "reused from the cache" if built.cached else f"built in {built.seconds:.0f} s"
    return f"{recipe.base_image} + {', '.join(recipe.inputs) or 'no manifest'} ({how}, key {recipe.key})"
